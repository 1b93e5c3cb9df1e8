kernel k
tensor t0 "a" hbm fp32 [4294967296, 4294967296]
