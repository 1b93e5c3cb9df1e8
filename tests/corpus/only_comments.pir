; nothing
; here
