"""Reference bodies for minikernel/dispatch (chapter 09)."""
