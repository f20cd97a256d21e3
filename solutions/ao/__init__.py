"""Reference solutions for chapter 10's quantization and fusion (``minikernel/ao/``)."""
