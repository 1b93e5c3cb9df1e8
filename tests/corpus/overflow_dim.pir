kernel k
tensor t0 "a" hbm fp32 [99999999999999999999]
