"""Reference solutions for exercises 5.6 and 5.7 (``minikernel/norm/gpu.py``)."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda
from numba.cuda import libdevice

from minikernel.device import SIMULATOR
from minikernel.norm.cpu import Array
from minikernel.norm.gpu import block_sum
from minikernel.norm.sizes import NORM_THREADS

#: Columns of a row the forward keeps in registers (1024 on a GPU): a row up to this long
#: is read from memory once; the columns past it are read again in each of the three steps.
KEPT_COLUMNS = 8 * NORM_THREADS if SIMULATOR else 16 * NORM_THREADS
#: Threads of a warp, the group that can add up values without shared memory.
WARP = 32


# ---------------------------------------------------------------- block sums
@cuda.jit(device=True)
def _warp_block_sum(partial, value):
    """``block_sum`` for a real GPU: warp shuffles, and one barrier instead of a tree of them.

    Within a warp, ``shfl_down_sync`` hands each thread the value of the thread
    ``offset`` lanes up, so five steps (16, 8, 4, 2, 1) leave the warp's total in lane 0
    without touching memory. Lane 0 of each warp stores it in ``partial[warp]``, one
    barrier, and every thread adds the ``NORM_THREADS // WARP`` totals; a last barrier so
    the next call may overwrite ``partial``. (numba's simulator has no shuffles: there
    the shared-memory tree of ``block_sum`` runs, with the same result.)
    """
    t = cuda.threadIdx.x
    for offset in (16, 8, 4, 2, 1):
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
    if t % WARP == 0:
        partial[t // WARP] = value
    cuda.syncthreads()
    total = 0.0
    for w in range(NORM_THREADS // WARP):
        total += partial[w]
    cuda.syncthreads()
    return total


_block_sum = block_sum if SIMULATOR or NORM_THREADS < WARP else _warp_block_sum


# ------------------------------------------------- 16 bytes as 2 or 4 columns
# numba has no 4-float vector type, so a float32 row is seen as complex128: 16 bytes,
# four columns, in one load. Each 8-byte half (a float64 to numba) holds two float32
# columns, the lower-numbered one in its low 4 bytes; libdevice reinterprets the bits
# (no arithmetic, no memory traffic). numba's simulator has no libdevice: numpy's views
# do the same there.
@cuda.jit(device=True)
def _float32_halves(value):
    """The two float32 columns in the 8 bytes of ``value``: (low, high)."""
    return (libdevice.int_as_float(libdevice.double2loint(value)),
            libdevice.int_as_float(libdevice.double2hiint(value)))


@cuda.jit(device=True)
def _float32_pair(low, high):
    """The 8 bytes holding two float32 columns (inverse of ``_float32_halves``)."""
    return libdevice.hiloint2double(libdevice.float_as_int(high), libdevice.float_as_int(low))


@cuda.jit(device=True)
def _float32_halves_simulated(value):
    halves = np.array([value], np.float64).view(np.float32)
    return halves[0], halves[1]


@cuda.jit(device=True)
def _float32_pair_simulated(low, high):
    return np.array([low, high], np.float32).view(np.float64)[0]


_halves, _pair = ((_float32_halves_simulated, _float32_pair_simulated) if SIMULATOR
                  else (_float32_halves, _float32_pair))


@cuda.jit(device=True)
def _split_float32(wide, cols, k):
    """``cols[k, 0:4]`` = the four float32 columns of one 16-byte load."""
    cols[k, 0], cols[k, 1] = _halves(wide.real)
    cols[k, 2], cols[k, 3] = _halves(wide.imag)


@cuda.jit(device=True)
def _join_float32(ys):
    """The 16 bytes of four float32 columns ``ys[0:4]``, as one complex128."""
    return complex(_pair(ys[0], ys[1]), _pair(ys[2], ys[3]))


@cuda.jit(device=True)
def _split_float64(wide, cols, k):
    """``cols[k, 0:2]`` = the two float64 columns of one 16-byte load."""
    cols[k, 0], cols[k, 1] = wide.real, wide.imag


@cuda.jit(device=True)
def _join_float64(ys):
    return complex(ys[0], ys[1])


# ------------------------------------------------------------------ forward
def layer_norm_forward_gpu(x: Array, weight: Array, bias: Array, eps: float,
                           out: Array, mean: Array, rstd: Array) -> None:
    # Tuned past the exercise's three passes (docs/benchmarks.md, *On a GPU*): each thread keeps its
    # columns of the row in registers, so the row is read from memory once, 16 bytes per
    # load (four float32 columns or two float64) when the row's length allows it;
    # norm/native.py hands the kernel rows that start on a 16-byte boundary. The dtype is
    # known when numba compiles, so each dtype compiles only its own branches.
    n = x.shape[1]
    if x.itemsize == 4:
        if n % 4 == 0:
            _wide_float32(x.view(np.complex128), weight, bias, eps, out.view(np.complex128), mean, rstd)
        else:
            _three_passes(x, weight, bias, eps, out, mean, rstd)
    elif n % 2 == 0:
        _wide_float64(x.view(np.complex128), weight, bias, eps, out.view(np.complex128), mean, rstd)
    else:
        _three_passes(x, weight, bias, eps, out, mean, rstd)


def _row_in_registers(real, width, split, join):
    """The forward on rows seen as 16-byte values of ``width`` columns of dtype ``real``.

    Thread ``t`` loads the 16-byte values ``q = t, t + NORM_THREADS, ...`` of its row
    (columns ``width * q`` to ``width * q + width - 1``): consecutive threads read
    consecutive 16 bytes, and keep them in registers for the three steps.
    """
    kept_loads = KEPT_COLUMNS // (width * NORM_THREADS)

    @cuda.jit(device=True)
    def forward(wide, weight, bias, eps, out_wide, mean, rstd):
        partial = cuda.shared.array(NORM_THREADS, np.float64)
        cols = cuda.local.array((kept_loads, width), real)  # fixed sizes: numba keeps them in registers
        extra = cuda.local.array((1, width), real)  # a load past the kept columns
        ys = cuda.local.array(width, real)
        r, t = cuda.blockIdx.x, cuda.threadIdx.x
        loads = wide.shape[1]
        n = width * loads
        kept = min(loads, kept_loads * NORM_THREADS)
        acc = 0.0
        for k in range(kept_loads):  # 1. the row's sum, keeping what was loaded
            for c in range(width):
                cols[k, c] = 0.0
            if t + k * NORM_THREADS < kept:
                split(wide[r, t + k * NORM_THREADS], cols, k)  # one load, `width` columns
            for c in range(width):
                acc += cols[k, c]
        for q in range(kept + t, loads, NORM_THREADS):  # a row longer than the registers hold
            split(wide[r, q], extra, 0)
            for c in range(width):
                acc += extra[0, c]
        m = _block_sum(partial, acc) / n
        acc = 0.0
        for k in range(kept_loads):  # 2. the squared deviations (float64, like the sums)
            if t + k * NORM_THREADS < kept:
                for c in range(width):
                    d = cols[k, c] - m
                    acc += d * d
        for q in range(kept + t, loads, NORM_THREADS):
            split(wide[r, q], extra, 0)
            for c in range(width):
                d = extra[0, c] - m
                acc += d * d
        rs = 1.0 / math.sqrt(_block_sum(partial, acc) / n + eps)
        mr, rsr = real(m), real(rs)  # 3. the output, in the input's precision (as PyTorch)
        for k in range(kept_loads):
            q = t + k * NORM_THREADS
            if q < kept:
                for c in range(width):
                    j = width * q + c
                    ys[c] = (cols[k, c] - mr) * rsr * weight[j] + bias[j]
                out_wide[r, q] = join(ys)  # one store, `width` columns
        for q in range(kept + t, loads, NORM_THREADS):
            split(wide[r, q], extra, 0)
            for c in range(width):
                j = width * q + c
                ys[c] = (extra[0, c] - mr) * rsr * weight[j] + bias[j]
            out_wide[r, q] = join(ys)
        if t == 0:
            mean[r] = m
            rstd[r] = rs

    return forward


_wide_float32 = _row_in_registers(np.float32, 4, _split_float32, _join_float32)
_wide_float64 = _row_in_registers(np.float64, 2, _split_float64, _join_float64)


@cuda.jit(device=True)
def _three_passes(x, weight, bias, eps, out, mean, rstd):
    """The exercise as its docstring describes it (rows whose length is not a whole number of 16 bytes)."""
    partial = cuda.shared.array(NORM_THREADS, np.float64)
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    n = x.shape[1]
    acc = 0.0
    for j in range(t, n, NORM_THREADS):  # pass 1: this thread's share of the row sum
        acc += x[r, j]
    m = _block_sum(partial, acc) / n
    acc = 0.0
    for j in range(t, n, NORM_THREADS):  # pass 2: squared deviations from the mean
        d = x[r, j] - m
        acc += d * d
    rs = 1.0 / math.sqrt(_block_sum(partial, acc) / n + eps)
    for j in range(t, n, NORM_THREADS):  # pass 3: this thread's columns of the output
        out[r, j] = (x[r, j] - m) * rs * weight[j] + bias[j]
    if t == 0:
        mean[r] = m
        rstd[r] = rs


def layer_norm_backward_gpu(dy: Array, x: Array, mean: Array, rstd: Array, weight: Array, dx: Array) -> None:
    partial = cuda.shared.array(NORM_THREADS, np.float64)
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    n = x.shape[1]
    m, rs = mean[r], rstd[r]
    acc_g = 0.0
    acc_gx = 0.0
    for j in range(t, n, NORM_THREADS):
        g = dy[r, j] * weight[j]
        acc_g += g
        acc_gx += g * (x[r, j] - m) * rs
    sum_g = _block_sum(partial, acc_g)
    sum_gx = _block_sum(partial, acc_gx)
    scale = rs / n
    for j in range(t, n, NORM_THREADS):
        xhat = (x[r, j] - m) * rs
        dx[r, j] = scale * (n * dy[r, j] * weight[j] - sum_g - xhat * sum_gx)


def layer_norm_param_grads_gpu(dy: Array, x: Array, mean: Array, rstd: Array, dw: Array, db: Array) -> None:
    j = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    rows, n = x.shape
    if j < n:
        sw = 0.0
        sb = 0.0
        for r in range(rows):
            sw += dy[r, j] * (x[r, j] - mean[r]) * rstd[r]
            sb += dy[r, j]
        dw[j] = sw
        db[j] = sb
