kernel k
tensor t0 "x" sbuf fp32 [4, 4]
i0 = memset engine=dve value=1 dst=t7{p0[1, 4] +0 [1, 4]}
