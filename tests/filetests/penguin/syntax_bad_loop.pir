; test verify
; Loops: a term on an index no loop encloses is a syntax error naming its column.
kernel bad_loop
tensor t0 "x" sbuf fp32 [128, 512] @0
loop i0 x2 {
  i0 = memset engine=pool value=0 dst=t0{p0[1, 128] +0+64*i1 [1, 64]} after()   ; error: syntax: 55: unknown loop index `i1`: the enclosing loop is i0
}

