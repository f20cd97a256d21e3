"""Reference bodies for minikernel/autograd (chapter 03)."""
