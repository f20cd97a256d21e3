"""Tile sizes for the reference CPU matmul, chosen from this machine's cache sizes.

Your exercise 2.5 uses the fixed constants of ``sizes.py`` (``CPU_TILE_M``,
``CPU_TILE_N``, ``CPU_TILE_K``). The reference sizes its tiles for the CPU it runs
on, from the data cache sizes the operating system reports:

* ``k`` (steps of the inner dimension per block): the 4 rows of ``a`` and 4 columns
  of ``b`` that one 4 x 4 block of sums reads, ``8 * k`` values of 4 bytes, fill at
  most half of the L1 data cache. A longer ``k`` spreads the end of each block (16
  vector sums folded into 16 numbers) over more multiply-adds.
* ``n`` (columns of ``out`` per tile): the packed tile of ``b``, ``n * k`` values,
  fills at most half of the L2 cache, where it stays while every 4 rows of ``a``
  stream past it.
* ``m`` (rows per tile): 256, so each packed column of ``b`` serves 256 rows.

Each is a power of two within the bounds below. The kernel takes fewer rows or
columns per task when a product has fewer tiles than ``tasks``, the CPU's cores (a
256 x 256 product is one tile), so that every thread has work.

numba compiles these numbers into the kernel as constants and caches the compiled
code per CPU name (e.g. ``znver4``): on the machine that compiled it they cannot
change, since its caches and cores do not.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Bounds of each size (powers of two; rows and columns are multiples of 4).
K_RANGE, N_RANGE = (64, 512), (64, 256)
TILE_M = 256
#: Assumed when the OS does not say: 32 KiB L1 data cache, 1 MiB L2.
DEFAULT_L1D, DEFAULT_L2 = 32 * 1024, 1024 * 1024
FLOAT32 = 4
SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class Tiles:
    m: int
    n: int
    k: int
    l1d: int  #: bytes
    l2: int  #: bytes
    source: str  #: where the cache sizes came from
    tasks: int  #: split tiles until a product has this many (the cores)

    def describe(self) -> str:
        return (f"reference matmul tiles {self.m}x{self.n}, k blocks of {self.k}, at least {self.tasks} tasks "
                f"(L1d {self.l1d // 1024} KiB, L2 {self.l2 // 1024} KiB from {self.source})")


def _size_bytes(text: str) -> int:
    """``"32K"`` -> 32768, ``"1024K"``, ``"2M"``, ``"512"`` (bytes)."""
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _from_sysfs(root: Path) -> tuple[int, int] | None:
    """(L1 data, L2) bytes from Linux's ``/sys/.../cache/index*``, or None."""
    found: dict[int, int] = {}
    for entry in sorted(root.glob("index*")):
        try:
            level = int((entry / "level").read_text())
            kind = (entry / "type").read_text().strip()
            size = _size_bytes((entry / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and size > 0:
            found.setdefault(level, size)
    return (found[1], found[2]) if 1 in found and 2 in found else None


def _from_sysconf() -> tuple[int, int] | None:
    """(L1 data, L2) bytes from ``sysconf`` (glibc reports them from CPUID), or None."""
    try:
        l1d, l2 = os.sysconf("SC_LEVEL1_DCACHE_SIZE"), os.sysconf("SC_LEVEL2_CACHE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return (l1d, l2) if l1d > 0 and l2 > 0 else None


def cache_sizes(root: Path = SYSFS_CACHE) -> tuple[int, int, str]:
    """(L1 data, L2, where from): sysfs, else sysconf, else the defaults."""
    if (sizes := _from_sysfs(root)) is not None:
        return (*sizes, "sysfs")
    if (sizes := _from_sysconf()) is not None:
        return (*sizes, "sysconf")
    return DEFAULT_L1D, DEFAULT_L2, "defaults: the OS did not say"


def _power_of_two_at_most(limit: float, bounds: tuple[int, int]) -> int:
    low, high = bounds
    size = low
    while size * 2 <= min(limit, high):
        size *= 2
    return size


def choose(l1d: int, l2: int, source: str = "given", cores: int = 1) -> Tiles:
    """The reference's tiles for caches of ``l1d`` and ``l2`` bytes and ``cores`` cores (see the module docstring)."""
    k = _power_of_two_at_most(l1d / 2 / (8 * FLOAT32), K_RANGE)
    n = _power_of_two_at_most(l2 / 2 / (k * FLOAT32), N_RANGE)
    return Tiles(TILE_M, n, k, l1d, l2, source, max(cores, 1))


#: The tiles of this machine, chosen once per process.
REFERENCE_TILES = choose(*cache_sizes(), cores=os.cpu_count() or 1)
