"""Reference solutions for exercises 10.2 and 10.3 (``minikernel/utils/data/``)."""
