"""Bank v4 while it is written: the format-4 domain files (``domains/``) and a preview build."""
