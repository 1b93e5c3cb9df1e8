kernel k
tensor t0 "a" hbm fp64 [4]
