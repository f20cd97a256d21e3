"""is_contiguous compares strides even for a tensor with no elements."""
EXERCISE = "1.6"


def is_contiguous(shape, strides):
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True
