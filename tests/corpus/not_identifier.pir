kernel "my kernel"
