kernel a
kernel b
