"""minikernel.utils.data.formats: oracle = the arrays written (lossless formats), PIL/numpy's own readers."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from minikernel.utils.data.formats import ImageFiles, PackedImages, pack, synthetic_image, write_images


@pytest.mark.parametrize("fmt", ["png", "bmp", "npy"])
def test_lossless_formats_read_back_exactly(tmp_path, fmt):
    paths = write_images(tmp_path, 3, fmt, size=32)
    ds = ImageFiles(paths)
    for i in range(3):
        assert torch.equal(ds[i], torch.from_numpy(synthetic_image(i, 32)))


def test_jpeg_is_lossy_and_draft_decodes_smaller(tmp_path):
    paths = write_images(tmp_path, 2, "jpeg", size=64)
    full, half = ImageFiles(paths)[1], ImageFiles(paths, draft=2)[1]
    assert full.shape == (64, 64, 3) and half.shape == (32, 32, 3)
    assert torch.equal(full, torch.from_numpy(np.array(Image.open(paths[1]).convert("RGB"))))
    assert 0 < (full.float() - torch.from_numpy(synthetic_image(1, 64)).float()).abs().mean() < 20


@pytest.mark.parametrize("fmt", ["png", "npy"])
def test_packed_file_equals_the_files_also_in_workers(tmp_path, fmt):
    paths = write_images(tmp_path / "files", 6, fmt, size=16)
    rec, idx = pack(paths, tmp_path / "all")
    offsets = np.fromfile(idx, dtype=np.int64)
    assert offsets[-1] == rec.stat().st_size == sum(p.stat().st_size for p in paths)
    packed, files = PackedImages(rec, fmt), ImageFiles(paths)
    assert len(packed) == 6
    assert all(torch.equal(packed[i], files[i]) for i in range(6))
    batches = list(torch.utils.data.DataLoader(packed, batch_size=3, num_workers=2))
    assert torch.equal(torch.cat(batches), torch.stack([files[i] for i in range(6)]))


def test_unknown_format(tmp_path):
    with pytest.raises(ValueError, match="fmt must be one of"):
        write_images(tmp_path, 1, "gif")
