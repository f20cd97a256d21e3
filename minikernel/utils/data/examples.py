"""Datasets for chapter 10's input pipeline (importable by worker processes)."""
from __future__ import annotations

import time

import torch
from torch.utils.data import Dataset


class SlowSquares(Dataset):
    """Sample ``i`` is ``tensor([i, i*i])`` (float32), after ``delay_s`` seconds of "decoding".

    The delay stands for reading and decoding a file: time a worker spends waiting or
    computing without the main process, which is what extra workers overlap.
    """

    def __init__(self, length: int, delay_s: float = 0.0) -> None:
        self.length = length
        self.delay_s = delay_s

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> torch.Tensor:
        if not 0 <= i < self.length:
            raise IndexError(f"index {i} is out of range for a dataset of {self.length} samples")
        if self.delay_s:
            time.sleep(self.delay_s)
        return torch.tensor([float(i), float(i * i)])


class BrokenAt(SlowSquares):
    """Like ``SlowSquares``, but reading sample ``bad`` raises ValueError (a corrupt file)."""

    def __init__(self, length: int, bad: int) -> None:
        super().__init__(length)
        self.bad = bad

    def __getitem__(self, i: int) -> torch.Tensor:
        if i == self.bad:
            raise ValueError(f"sample {i} is corrupt")
        return super().__getitem__(i)
