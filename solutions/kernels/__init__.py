"""Reference bodies for ``minikernel/kernels`` (exercises 2.1–2.9)."""
