kernel k
tensor t0 "a" dram fp32 [4]
