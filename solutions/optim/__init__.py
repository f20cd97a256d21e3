"""Reference solutions for chapter 08 (``minikernel/optim/``)."""
