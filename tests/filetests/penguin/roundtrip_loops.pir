; test roundtrip
; Loops: `loop iD xT {` ... `}` repeats its body T times (iD is the loop's depth: i0
; outermost). A tile's start partition or element offset, or an edge's instruction in
; `after(...)`, followed by `+C*iD` terms advances by C per trip of loop iD. An instruction's
; id is its first iteration's place in the unrolled program order. Hand-written here: `+i1`
; for `+1*i1`, a space before a term, terms in any order, a negative step; the canonical print
; writes `+C*iD` in depth order.
kernel fill_rows
tensor t0 "x" sbuf fp32 [128, 512] @0
tensor t1 "y" hbm fp32 [128, 512]
i0 = memset engine=pool value=0 dst=t0{p0[1, 128] +0 [1, 512]} after()
loop i0 x4 {
  i1 = dma_copy dst=t1{p0[512, 32] +0 +16384*i0 [1, 64]} src=t0{p0[1, 32] +448-64*i0 [1, 64]} after(i0 raw, i0+3*i0 war)
  loop i1 x2 {
    i2 = memset engine=pool value=1 dst=t0{p0+i1[1, 32] +0+8*i1+128*i0 [1, 8]} after(i1+i1+3*i0 war)
  }
}

; expect:
; kernel fill_rows
; tensor t0 "x" sbuf fp32 [128, 512] @0
; tensor t1 "y" hbm fp32 [128, 512]
; i0 = memset engine=pool value=0 dst=t0{p0[1, 128] +0 [1, 512]}
; loop i0 x4 {
;   i1 = dma_copy cast=rne dst=t1{p0[512, 32] +0+16384*i0 [1, 64]} src=t0{p0[1, 32] +448-64*i0 [1, 64]} after(i0 raw, i0+3*i0 war)
;   loop i1 x2 {
;     i2 = memset engine=pool value=1 dst=t0{p0+1*i1[1, 32] +0+128*i0+8*i1 [1, 8]} after(i1+3*i0+1*i1 war)
;   }
; }
