"""Reference bodies for every exercise, one module per ``minikernel`` module.

Each function has the same name and signature as the stub it replaces. A
reference that needs another exercise calls it through ``minikernel`` so that it
runs in whatever mode that exercise is in.
"""
