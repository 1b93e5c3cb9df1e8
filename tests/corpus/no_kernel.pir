; no kernel line
tensor t0 "a" hbm fp32 [4]
