"""infer_size fills in -1 but never checks that the sizes multiply to numel."""
EXERCISE = "1.5"

import math


def infer_size(shape, numel):
    if list(shape).count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    return tuple(numel // max(known, 1) if s == -1 else s for s in shape)
