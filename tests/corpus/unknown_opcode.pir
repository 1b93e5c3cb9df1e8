kernel k
i0 = frobnicate
