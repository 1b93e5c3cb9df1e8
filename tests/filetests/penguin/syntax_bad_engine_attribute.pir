; test verify
; An attribute of the compute-engine kinds that does not parse is a syntax error naming it.
kernel bad_func
tensor t0 "x" sbuf fp32 [4, 8] @0
i0 = activation func=swish dst=t0{p0[1, 4] +0 [1, 8]} src=t0{p0[1, 4] +0 [1, 8]}   ; error: syntax: 17: unknown activation func `swish` (expected one of copy, exp, log, tanh, sigmoid, relu, gelu, gelu_apprx_tanh, silu, softplus, square, sqrt, rsqrt, reciprocal, abs, sign, erf, sin, gelu_dx, gelu_apprx_sigmoid, gelu_apprx_sigmoid_dx, silu_dx, mish, erf_dx, arctan, cos, tan, floor, ceil, trunc)
