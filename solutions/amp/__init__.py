"""Reference solutions for chapter 06 (``minikernel/amp/``)."""
