"""Reference solutions for exercises 10.4-10.6 (``minikernel/ao/quantization/``)."""
