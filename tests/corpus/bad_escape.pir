kernel "a\q"
