"""Reference solutions for chapter 07 (``minikernel/distributed/``)."""
