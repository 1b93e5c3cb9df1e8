kernel k
tensor t0 "a hbm fp32 [4]
