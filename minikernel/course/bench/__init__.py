"""``python -m minikernel bench``: minikernel against PyTorch, timed honestly (see ``timing``)."""
