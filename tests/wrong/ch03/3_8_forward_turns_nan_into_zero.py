"""my_relu_forward keeps the positives with F.gt: relu(nan) comes out 0 instead of nan."""
EXERCISE = "3.8"

import minikernel.autograd.functions as F


def my_relu_forward(ctx, input):
    ctx.save_for_backward(input)
    return F.where(F.gt(input, 0), input, 0.0)
