kernel k
tensor t1 "a" hbm fp32 [4]
