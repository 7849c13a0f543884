module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>) -> (tensor<64x64xf32> {jax.result_info = "result"}) {
    %0 = chlo.square %arg2 : tensor<64x64xf32> -> tensor<64x64xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%arg2 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
    %cst_0 = stablehlo.constant dense<6.400000e+01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %3 = stablehlo.divide %1, %2 : tensor<64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%0 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
    %cst_2 = stablehlo.constant dense<6.400000e+01> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %6 = stablehlo.divide %4, %5 : tensor<64xf32>
    %7 = chlo.square %3 : tensor<64xf32> -> tensor<64xf32>
    %8 = stablehlo.subtract %6, %7 : tensor<64xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %10 = stablehlo.maximum %9, %8 : tensor<64xf32>
    %11 = stablehlo.reshape %3 : (tensor<64xf32>) -> tensor<64x1xf32>
    %12 = stablehlo.reshape %10 : (tensor<64xf32>) -> tensor<64x1xf32>
    %13 = stablehlo.broadcast_in_dim %11, dims = [0, 1] : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %14 = stablehlo.subtract %arg2, %13 : tensor<64x64xf32>
    %cst_4 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<64x1xf32>
    %16 = stablehlo.add %12, %15 : tensor<64x1xf32>
    %17 = stablehlo.rsqrt %16 : tensor<64x1xf32>
    %18 = stablehlo.reshape %arg1 : (tensor<64xf32>) -> tensor<1x64xf32>
    %19 = stablehlo.broadcast_in_dim %17, dims = [0, 1] : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %20 = stablehlo.broadcast_in_dim %18, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<64x64xf32>
    %21 = stablehlo.multiply %19, %20 : tensor<64x64xf32>
    %22 = stablehlo.multiply %14, %21 : tensor<64x64xf32>
    %23 = stablehlo.reshape %arg0 : (tensor<64xf32>) -> tensor<1x64xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<64x64xf32>
    %25 = stablehlo.add %22, %24 : tensor<64x64xf32>
    return %25 : tensor<64x64xf32>
  }
}
