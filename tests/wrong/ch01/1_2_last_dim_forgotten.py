"""Off by one: the loop stops before the last dimension."""
EXERCISE = "1.2"


def index_to_position(index, strides, offset=0):
    position = offset
    for d in range(len(index) - 1):
        position += index[d] * strides[d]
    return position
