"""With a -1 beside a 0 and elements to spare, infer_size divides by the known product 0 (ZeroDivisionError) instead of raising torch's RuntimeError."""
EXERCISE = "1.5"


def infer_size(shape, numel):
    shown = "[" + ", ".join(str(s) for s in shape) + "]"
    if sum(1 for s in shape if s == -1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for d, size in enumerate(shape):
        if size < -1:
            raise RuntimeError(f"invalid shape dimension {size} at index {d} of shape {shown}")
    known = 1
    for size in shape:
        if size != -1:
            known *= size
    if -1 not in shape:
        if known != numel:
            raise RuntimeError(f"shape '{shown}' is invalid for input of size {numel}")
        return tuple(shape)
    if numel == 0 and known == 0:
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape {shown} because the "
            "unspecified dimension size -1 can be any value and is ambiguous")
    if numel % known != 0:
        raise RuntimeError(f"shape '{shown}' is invalid for input of size {numel}")
    return tuple(numel // known if s == -1 else s for s in shape)
