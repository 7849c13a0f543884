module {
  func.func @main(%arg0: tensor<64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_1 = arith.constant dense<64> : tensor<1xi64>
    %cst_2 = arith.constant dense<1.000000e-05> : tensor<1xf64>
    %0 = stablehlo.convert %arg2 : (tensor<64x64xf32>) -> tensor<64x64xf64>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf64>, tensor<f64>) -> tensor<64xf64>
    %2 = stablehlo.reshape %1 : (tensor<64xf64>) -> tensor<64x1xf64>
    %3 = stablehlo.convert %cst_1 : (tensor<1xi64>) -> tensor<1xf64>
    %4 = stablehlo.reshape %3 : (tensor<1xf64>) -> tensor<f64>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f64>) -> tensor<64x1xf64>
    %6 = stablehlo.divide %2, %5 : tensor<64x1xf64>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] : (tensor<64x1xf64>) -> tensor<64x64xf64>
    %8 = stablehlo.subtract %0, %7 : tensor<64x64xf64>
    %9 = stablehlo.multiply %8, %8 : tensor<64x64xf64>
    %10 = stablehlo.reduce(%9 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf64>, tensor<f64>) -> tensor<64xf64>
    %11 = stablehlo.reshape %10 : (tensor<64xf64>) -> tensor<64x1xf64>
    %12 = stablehlo.divide %11, %5 : tensor<64x1xf64>
    %13 = stablehlo.convert %12 : (tensor<64x1xf64>) -> tensor<64x1xf32>
    %14 = stablehlo.reduce(%arg2 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
    %15 = stablehlo.reshape %14 : (tensor<64xf32>) -> tensor<64x1xf32>
    %16 = stablehlo.convert %cst_1 : (tensor<1xi64>) -> tensor<1xf32>
    %17 = stablehlo.reshape %16 : (tensor<1xf32>) -> tensor<f32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<f32>) -> tensor<64x1xf32>
    %19 = stablehlo.divide %15, %18 : tensor<64x1xf32>
    %20 = stablehlo.convert %cst_2 : (tensor<1xf64>) -> tensor<1xf32>
    %21 = stablehlo.reshape %20 : (tensor<1xf32>) -> tensor<f32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [] : (tensor<f32>) -> tensor<64x1xf32>
    %23 = stablehlo.add %13, %22 : tensor<64x1xf32>
    %24 = stablehlo.rsqrt %23 : tensor<64x1xf32>
    %25 = stablehlo.broadcast_in_dim %19, dims = [0, 1] : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %26 = stablehlo.subtract %arg2, %25 : tensor<64x64xf32>
    %27 = stablehlo.broadcast_in_dim %24, dims = [0, 1] : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %28 = stablehlo.multiply %26, %27 : tensor<64x64xf32>
    %29 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
    %30 = stablehlo.multiply %28, %29 : tensor<64x64xf32>
    %31 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
    %32 = stablehlo.add %30, %31 : tensor<64x64xf32>
    return %32 : tensor<64x64xf32>
  }
}
