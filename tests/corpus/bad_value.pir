kernel k
tensor t0 "x" sbuf fp32 [4, 4]
i0 = memset engine=dve value=lots dst=t0{p0[1, 4] +0 [1, 4]}
