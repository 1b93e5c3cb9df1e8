kernel k
tensor t0 "x" sbuf fp32 [200, 4] @0
i0 = memset engine=dve value=1 dst=t0{p0[1, 200] +0 [1, 4]}
