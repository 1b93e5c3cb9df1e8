kernel k
tensor t0 "x" sbuf fp32 [4, 4]
i1 = memset engine=dve value=1 dst=t0{p0[1, 4] +0 [1, 4]}
