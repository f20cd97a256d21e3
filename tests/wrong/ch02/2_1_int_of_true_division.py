"""to_index_into moves to the next dimension with int(ordinal / size): exact for small shapes, but past 2**53 elements the float64 quotient rounds and the index is off."""
EXERCISE = "2.1"


def to_index_into(ordinal, shape, out_index):
    for d in range(len(shape) - 1, -1, -1):
        out_index[d] = ordinal % shape[d]
        ordinal = int(ordinal / shape[d])
