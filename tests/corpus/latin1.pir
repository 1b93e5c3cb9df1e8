kernel k
tensor t0 "é" hbm fp32 [1]
