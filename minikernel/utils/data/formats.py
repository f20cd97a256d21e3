"""Image files on disk for chapter 10's input-pipeline measurements (decoders and file formats).

The notes' speed-ups for loading — a faster decoder, an uncompressed format (BMP,
raw arrays), reduced-size JPEG decoding, packing many small files into one
indexed file (MXNet RecordIO, TFRecord, LMDB, HDF5) — each shorten the time a
worker spends per sample. These helpers make a folder of synthetic images in
several formats and read them back as datasets:

* :func:`write_images` — ``n`` images (H×W×3 uint8) as ``png``, ``jpeg``, ``bmp`` or ``npy`` files;
* :class:`ImageFiles` — a map-style dataset: one file opened and decoded per sample
  (PIL for images, ``numpy.load`` for ``.npy``); ``draft=k`` lets PIL's JPEG
  decoder scale by 1/k while decoding (DCT scaling);
* :func:`pack` / :class:`PackedImages` — every file's bytes in one file plus an
  offset index (the RecordIO layout: ``.rec`` data, ``.idx`` offsets), read
  through one ``mmap`` instead of one ``open`` per sample.

PIL's ``Image.open`` is lazy: it reads the header (format, size, mode) and decodes
the pixels only on ``load()`` or first access.
"""
from __future__ import annotations

import io
import mmap
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

FORMATS = ("png", "jpeg", "bmp", "npy")


def synthetic_image(i: int, size: int = 128) -> np.ndarray:
    """A smooth colour pattern plus mild noise (like a photo: compressible, not trivially)."""
    rng = np.random.default_rng(i)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    phase = rng.uniform(0, 2 * np.pi, 3)
    channels = [127 + 100 * np.sin(6 * xx + 4 * yy * (c + 1) + phase[c]) for c in range(3)]
    image = np.stack(channels, axis=-1) + rng.normal(0, 6, (size, size, 3))
    return np.clip(image, 0, 255).astype(np.uint8)


def write_images(directory: str | Path, n: int, fmt: str, size: int = 128) -> list[Path]:
    """Write images 0..n-1 to ``directory/{i:05d}.{fmt}``; returns the paths."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = directory / f"{i:05d}.{fmt}"
        array = synthetic_image(i, size)
        if fmt == "npy":
            np.save(path, array)
        else:
            Image.fromarray(array).save(path, quality=90) if fmt == "jpeg" else Image.fromarray(array).save(path)
        paths.append(path)
    return paths


def decode(data: bytes | memoryview, fmt: str, draft: int = 1) -> torch.Tensor:
    """Decode one file's bytes to an (H, W, 3) uint8 tensor."""
    if fmt == "npy":
        return torch.from_numpy(np.load(io.BytesIO(data)))
    image = Image.open(io.BytesIO(data))
    if draft > 1 and image.format == "JPEG":
        image.draft("RGB", (image.width // draft, image.height // draft))
    return torch.from_numpy(np.array(image.convert("RGB")))  # a writable copy


class ImageFiles(Dataset):
    """One file per sample, opened and decoded in ``__getitem__``.

    Args:
        paths (list of Path): the files, in sample order (all of one format).
        draft (int, optional): JPEG only: decode at 1/draft of the size. Default: ``1``.
    """

    def __init__(self, paths: list[Path], draft: int = 1) -> None:
        self.paths = [Path(p) for p in paths]
        self.draft = draft

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        path = self.paths[i]
        return decode(path.read_bytes(), path.suffix[1:], self.draft)


def pack(paths: list[Path], out: str | Path) -> tuple[Path, Path]:
    """Concatenate the files' bytes into ``out.rec`` and their offsets into ``out.idx``
    (int64: offset of file i, offset of file i+1, ...). Returns both paths."""
    out = Path(out)
    rec, idx = out.with_suffix(".rec"), out.with_suffix(".idx")
    offsets = [0]
    with open(rec, "wb") as f:
        for p in paths:
            offsets.append(offsets[-1] + f.write(Path(p).read_bytes()))
    np.asarray(offsets, dtype=np.int64).tofile(idx)
    return rec, idx


class PackedImages(Dataset):
    """The samples of a :func:`pack` file, each a slice of one memory map.

    Args:
        rec (Path): the packed data (``.rec``); its ``.idx`` sits beside it.
        fmt (str): the format of the packed files.

    The map is opened lazily in each process (a DataLoader worker gets its own).
    """

    def __init__(self, rec: str | Path, fmt: str) -> None:
        self.rec = Path(rec)
        self.fmt = fmt
        self.offsets = np.fromfile(self.rec.with_suffix(".idx"), dtype=np.int64)
        self._map: mmap.mmap | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> torch.Tensor:
        if self._map is None:
            with open(self.rec, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return decode(memoryview(self._map)[start:end], self.fmt)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_map": None}  # a map cannot be pickled to a worker
