"""infer_size fills the -1 with numel / known: a float (3.0) that compares equal to torch's 3 but is not a size."""
EXERCISE = "1.5"


def infer_size(shape, numel):
    shown = "[" + ", ".join(str(s) for s in shape) + "]"
    known, infer_dim = 1, None
    for d, size in enumerate(shape):
        if size == -1:
            if infer_dim is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer_dim = d
        elif size >= 0:
            known *= size
        else:
            raise RuntimeError(f"invalid shape dimension {size} at index {d} of shape {shown}")
    if numel == known or (infer_dim is not None and known > 0 and numel % known == 0):
        out = list(shape)
        if infer_dim is not None:
            if known == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {shown} because the "
                    "unspecified dimension size -1 can be any value and is ambiguous")
            out[infer_dim] = numel / known
        return tuple(out)
    raise RuntimeError(f"shape '{shown}' is invalid for input of size {numel}")
