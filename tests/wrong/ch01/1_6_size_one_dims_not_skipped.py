"""is_contiguous checks the stride of size-1 dimensions too."""
EXERCISE = "1.6"

import math


def is_contiguous(shape, strides):
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if stride != expected:
            return False
        expected *= size
    return True
