"""Reference solutions for chapter 10 (``minikernel/utils/``)."""
