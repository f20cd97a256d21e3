"""Reference bodies for minikernel/nn (chapter 04)."""
