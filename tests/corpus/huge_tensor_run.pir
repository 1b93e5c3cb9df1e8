; 4 TiB of HBM: within the text format, beyond the simulator.
kernel k
inputs t0
outputs t1
tensor t0 "a" hbm fp32 [4]
tensor t1 "big" hbm fp32 [1048576, 1048576]
tensor t2 "x" sbuf fp32 [4, 1] @0
i0 = dma_copy dst=t2{p0[1, 4] +0 [1, 1]} src=t0{p0[1, 4] +0 [1, 1]}
i1 = dma_copy dst=t1{p0[1048576, 4] +0 [1, 1]} src=t2{p0[1, 4] +0 [1, 1]}
