"""Reference bodies for ``minikernel/norm`` (exercises 5.1–5.7)."""
