kernel k
inputs
outputs t1
tensor t0 "x" sbuf fp32 [4, 4] @0
tensor t1 "y" hbm fp32 [4, 4]
i0 = memset engine=dve value=NaN dst=t0{p0[1, 4] +0 [1, 4]}
i1 = dma_copy dst=t1{p0[4, 4] +0 [1, 4]} src=t0{p0[1, 4] +0 [1, 4]}
