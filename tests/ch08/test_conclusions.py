"""Chapter 08's printed conclusions on reproducibility and label smoothing, recomputed:
what ``torch.manual_seed`` seeds, what ``PYTHONHASHSEED`` changes (set order, not dict
order), and the three label-smoothing targets on the chapter's logits."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch

ORDER_OF = "w = ['apple', 'banana', 'cherry', 'date', 'elder']; print([x[0] for x in set(w)], list(dict.fromkeys(w)))"


def _child(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([sys.executable, "-c", ORDER_OF], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_pythonhashseed_fixes_set_order_and_leaves_dict_order_alone():
    runs = {seed: _child(seed) for seed in ("0", "1", "2", "3")}
    assert _child("0") == runs["0"], "the same seed gives the same set order"
    set_orders = {r.split("] [")[0] for r in runs.values()}
    dict_orders = {r.split("] [")[1] for r in runs.values()}
    assert len(set_orders) > 1, "different seeds give different set orders"
    assert dict_orders == {"'apple', 'banana', 'cherry', 'date', 'elder']"}, "dicts keep insertion order"


def test_str_hashes_are_salted_per_process():
    hashes = {subprocess.run([sys.executable, "-c", "print(hash('apple'))"], env={**os.environ, "PYTHONHASHSEED": s},
                             capture_output=True, text=True, check=True).stdout for s in ("1", "2")}
    assert len(hashes) == 2


def test_manual_seed_seeds_every_cuda_device_through_manual_seed_all(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda seed: calls.append(("all", seed)))
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: calls.append(("current", seed)))
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(1234)
    finally:
        torch.random.set_rng_state(state)
    assert calls == [("all", 1234)]


def test_the_three_label_smoothing_targets_on_the_chapters_logits():
    logits, labels = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], dtype=torch.float64), torch.tensor([0, 2])
    eps, c = 0.1, 3

    def loss(on, off):
        total = 0.0
        for row, label in zip(logits.tolist(), labels.tolist()):
            log_z = math.log(sum(math.exp(v) for v in row))
            total -= sum((on if k == label else off) * (v - log_z) for k, v in enumerate(row))
        return total / len(labels)

    builtin = torch.nn.CrossEntropyLoss(label_smoothing=eps)(logits, labels).item()
    assert builtin == pytest.approx(loss(1 - eps + eps / c, eps / c), rel=1e-12)
    inline, module = loss(1 - eps, eps / (c - 1)), loss(1 - eps + eps / (c - 1), eps / (c - 1))
    assert min(abs(builtin - inline), abs(builtin - module), abs(module - inline)) > 1e-3
    module_target = torch.zeros(2, c, dtype=torch.float64).scatter_add_(
        1, labels.view(2, -1), torch.full((2, 1), 1 - eps, dtype=torch.float64)) + eps / (c - 1)
    assert module_target.sum(1).tolist() == pytest.approx([1 + eps / (c - 1)] * 2)
