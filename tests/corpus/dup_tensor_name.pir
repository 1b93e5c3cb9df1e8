kernel k
tensor t0 "a" hbm fp32 [4]
tensor t1 "a" hbm fp32 [4]
