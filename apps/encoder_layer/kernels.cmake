# The kernels of apps/encoder_layer, in one place: its CMakeLists.txt builds them, and
# test/e2e's encoder_ptx_test assembles each one's CUDA build.
# kernel | generator | GeneratorParams beyond the element types (and limits=optin on CUDA)
set(encoder_kernels
    "qkv|gemm|b_k_major=true add_bias=true"
    "scores|bmm|batch_dims=2 b_k_major=true"
    "softmax|softmax|scale=0.125 add_mask=true aligned=true"
    "context|bmm|batch_dims=2 block_n=64 warp_n=32"
    "out_proj|gemm|b_k_major=true add_bias=true add_residual=true"
    "layernorm|layernorm|epsilon=1e-12 aligned=true"
    "ffn_up|gemm|b_k_major=true add_bias=true activation=gelu"
    "ffn_down|gemm|b_k_major=true add_bias=true add_residual=true")

