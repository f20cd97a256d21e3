"""How the reference matmul's tile sizes follow the caches the OS reports (``kernels/cpu_tiles.py``)."""
from __future__ import annotations

import pytest

from minikernel.kernels import cpu_tiles


def _fake_cache(root, entries):
    for i, (level, kind, size) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return root


def test_sysfs_cache_sizes_take_the_data_and_unified_caches(tmp_path):
    root = _fake_cache(tmp_path, [(1, "Instruction", "64K"), (1, "Data", "48K"), (2, "Unified", "2048K"),
                                  (3, "Unified", "32M")])
    assert cpu_tiles.cache_sizes(root) == (48 * 1024, 2 * 1024 * 1024, "sysfs")


def test_without_sysfs_the_sizes_come_from_sysconf_or_the_defaults(tmp_path):
    l1d, l2, source = cpu_tiles.cache_sizes(tmp_path / "missing")
    assert source in ("sysconf", "defaults: the OS did not say")
    if source.startswith("defaults"):
        assert (l1d, l2) == (cpu_tiles.DEFAULT_L1D, cpu_tiles.DEFAULT_L2)
    assert l1d > 0 and l2 > 0


@pytest.mark.parametrize("l1d, l2", [(32 << 10, 1 << 20), (48 << 10, 2 << 20), (32 << 10, 512 << 10),
                                     (64 << 10, 256 << 10), (16 << 10, 16 << 20), (8 << 10, 64 << 10)])
def test_tiles_fit_the_caches_as_documented(l1d, l2):
    t = cpu_tiles.choose(l1d, l2, cores=3)
    for size, (low, high) in ((t.k, cpu_tiles.K_RANGE), (t.n, cpu_tiles.N_RANGE)):
        assert low <= size <= high and size & (size - 1) == 0, t
    # 4 rows of a and 4 columns of b, float32, in half of L1; the largest such k within bounds
    assert 8 * t.k * 4 <= l1d / 2 or t.k == cpu_tiles.K_RANGE[0], t
    assert 8 * 2 * t.k * 4 > l1d / 2 or t.k == cpu_tiles.K_RANGE[1], t
    # the packed tile of b, n x k float32, in half of L2
    assert t.n * t.k * 4 <= l2 / 2 or t.n == cpu_tiles.N_RANGE[0], t
    assert 2 * t.n * t.k * 4 > l2 / 2 or t.n == cpu_tiles.N_RANGE[1], t
    assert t.m % 4 == 0 and t.n % 4 == 0 and t.tasks == 3


def test_this_machines_choice_is_described():
    text = cpu_tiles.REFERENCE_TILES.describe()
    t = cpu_tiles.REFERENCE_TILES
    assert f"{t.m}x{t.n}" in text and f"k blocks of {t.k}" in text and t.source in text
