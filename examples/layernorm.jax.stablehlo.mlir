module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64x64xf32>) -> (tensor<64x64xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg2 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
    %cst_0 = stablehlo.constant dense<6.400000e+01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %2 = stablehlo.divide %0, %1 : tensor<64xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<64xf32>) -> tensor<64x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %5 = stablehlo.subtract %arg2, %4 : tensor<64x64xf32>
    %6 = chlo.square %5 : tensor<64x64xf32> -> tensor<64x64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
    %cst_2 = stablehlo.constant dense<6.400000e+01> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %9 = stablehlo.divide %7, %8 : tensor<64xf32>
    %10 = stablehlo.reshape %2 : (tensor<64xf32>) -> tensor<64x1xf32>
    %11 = stablehlo.reshape %9 : (tensor<64xf32>) -> tensor<64x1xf32>
    %12 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %13 = stablehlo.subtract %arg2, %12 : tensor<64x64xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<64x1xf32>
    %15 = stablehlo.add %11, %14 : tensor<64x1xf32>
    %16 = stablehlo.rsqrt %15 : tensor<64x1xf32>
    %17 = stablehlo.reshape %arg1 : (tensor<64xf32>) -> tensor<1x64xf32>
    %18 = stablehlo.broadcast_in_dim %16, dims = [0, 1] : (tensor<64x1xf32>) -> tensor<64x64xf32>
    %19 = stablehlo.broadcast_in_dim %17, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<64x64xf32>
    %20 = stablehlo.multiply %18, %19 : tensor<64x64xf32>
    %21 = stablehlo.multiply %13, %20 : tensor<64x64xf32>
    %22 = stablehlo.reshape %arg0 : (tensor<64xf32>) -> tensor<1x64xf32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0, 1] : (tensor<1x64xf32>) -> tensor<64x64xf32>
    %24 = stablehlo.add %21, %23 : tensor<64x64xf32>
    return %24 : tensor<64x64xf32>
  }
}
