"""Chapter 04's printed conclusions about losses, recomputed: label smoothing's three
versions (the built-in and the notes' two), cross-entropy's parts, the L1 penalty's
gradient and gradient accumulation. Float64 sums written out from the definitions
are the oracle. And visdom's other window kinds (§10): what the offline client writes,
and what replaying it makes in a live server."""
from __future__ import annotations

import json
import math
from urllib.parse import urlsplit

import numpy as np
import pytest
import torch
import visdom

from minikernel.course import dashboard_server
from tests.test_dashboard import free_port, start_server
from widgets.visdom_client import VisdomClient

EPS = 0.1


def _scores():
    torch.manual_seed(0)
    return torch.randn(4, 5, dtype=torch.float64), torch.tensor([1, 0, 4, 2])


def _loss_with_target(scores, target, on: float, off: float) -> float:
    """Mean over rows of -Σ_c t_c·log softmax(x)_c, with t = `on` at the label, `off` elsewhere."""
    total = 0.0
    for row, label in zip(scores.tolist(), target.tolist()):
        log_z = math.log(sum(math.exp(v) for v in row))
        total += -sum((on if c == label else off) * (v - log_z) for c, v in enumerate(row))
    return total / len(target)


def _notes_lsr_module(x, target, e=EPS):
    """The notes' LSR module: scatter_add_ 1-e onto the label, then add e/(C-1) everywhere."""
    n, c = x.shape
    one_hot = torch.zeros(n, c, dtype=x.dtype).scatter_add_(1, target.view(n, -1), torch.full((n, 1), 1 - e,
                                                                                             dtype=x.dtype))
    one_hot += e / (c - 1)
    return torch.sum(-x.log_softmax(1) * one_hot, dim=1).mean().item()


def _notes_inline(score, labels, e=EPS):
    """The notes' training-loop version: full(e/(C-1)), then scatter_ 1-e onto the label."""
    n, c = score.shape
    smoothed = torch.full((n, c), e / (c - 1), dtype=score.dtype).scatter_(1, labels[:, None], 1 - e)
    return (-torch.sum(score.log_softmax(1) * smoothed) / n).item()


def test_builtin_label_smoothing_is_the_uniform_mixture():
    scores, target = _scores()
    C = scores.shape[1]
    builtin = torch.nn.CrossEntropyLoss(label_smoothing=EPS)(scores, target).item()
    assert builtin == pytest.approx(_loss_with_target(scores, target, 1 - EPS + EPS / C, EPS / C), rel=1e-12)


def test_the_notes_versions_are_the_targets_the_chapter_says():
    scores, target = _scores()
    C = scores.shape[1]
    assert _notes_lsr_module(scores, target) == pytest.approx(
        _loss_with_target(scores, target, 1 - EPS + EPS / (C - 1), EPS / (C - 1)), rel=1e-12)
    assert _notes_inline(scores, target) == pytest.approx(
        _loss_with_target(scores, target, 1 - EPS, EPS / (C - 1)), rel=1e-12)


def test_the_three_losses_differ_and_relate_as_stated():
    scores, target = _scores()
    C = scores.shape[1]
    builtin = torch.nn.CrossEntropyLoss(label_smoothing=EPS)(scores, target).item()
    module, inline = _notes_lsr_module(scores, target), _notes_inline(scores, target)
    # "a drop-in replacement for neither": the gaps are far above float64 rounding
    assert abs(builtin - module) > 1e-3 and abs(builtin - inline) > 1e-3 and abs(module - inline) > 1e-3
    # built-in with ε == inline with ε·(C−1)/C
    assert builtin == pytest.approx(_notes_inline(scores, target, EPS * (C - 1) / C), rel=1e-12)
    # the module = inline + ε/(C−1)·plain cross-entropy, and its target rows sum to 1 + ε/(C−1)
    plain_ce = _loss_with_target(scores, target, 1.0, 0.0)
    assert module == pytest.approx(inline + EPS / (C - 1) * plain_ce, rel=1e-12)
    on, off = 1 - EPS + EPS / (C - 1), EPS / (C - 1)
    assert on + (C - 1) * off == pytest.approx(1 + EPS / (C - 1))


def test_the_chapter_prints_these_values_to_four_places():
    scores, target = _scores()
    C = scores.shape[1]
    printed = [round(v, 4) for v in (_loss_with_target(scores, target, 1 - EPS + EPS / C, EPS / C),
                                     _loss_with_target(scores, target, 1 - EPS + EPS / (C - 1), EPS / (C - 1)),
                                     _loss_with_target(scores, target, 1 - EPS, EPS / (C - 1)))]
    scores32 = scores.float()
    assert printed == [round(torch.nn.CrossEntropyLoss(label_smoothing=EPS)(scores32, target).item(), 4),
                       round(_notes_lsr_module(scores32, target), 4), round(_notes_inline(scores32, target), 4)]


def test_cross_entropy_is_nll_of_log_softmax_and_not_of_softmax():
    scores, target = _scores()
    ce = torch.nn.CrossEntropyLoss()(scores, target).item()
    assert ce == pytest.approx(_loss_with_target(scores, target, 1.0, 0.0), rel=1e-12)
    assert abs(torch.nn.CrossEntropyLoss()(scores.softmax(1), target).item() - ce) > 1e-2


def test_l1_penalty_adds_lambda_sign_w_to_the_gradient():
    torch.manual_seed(0)
    net, lam = torch.nn.Linear(3, 1).double(), 1e-2
    pred, goal = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64), torch.tensor([1.5], dtype=torch.float64)
    mse = torch.nn.MSELoss()(net(pred), goal)
    (mse_grad,) = torch.autograd.grad(mse, net.weight, retain_graph=True)
    (mse + lam * net.weight.abs().sum()).backward()
    assert torch.allclose(net.weight.grad, mse_grad + lam * net.weight.sign(), rtol=0, atol=1e-15)


def test_two_half_batches_accumulate_to_the_full_batch():
    torch.manual_seed(0)
    data, target = torch.randn(64, 4, dtype=torch.float64), torch.randn(64, 3, dtype=torch.float64)
    nets = [torch.nn.Linear(4, 3).double() for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    torch.nn.functional.mse_loss(nets[0](data), target).backward()
    for half in (slice(0, 32), slice(32, 64)):
        (torch.nn.functional.mse_loss(nets[1](data[half]), target[half]) / 2).backward()
    assert torch.allclose(nets[0].weight.grad, nets[1].weight.grad, rtol=1e-12, atol=1e-14)


# §10: visdom's other window kinds, written offline and replayed into a server ---------------


def _offline_windows(log_path):
    """The chapter's five calls on small stand-in data, through visdom's offline client."""
    torch.manual_seed(0)
    points, predicted = torch.randn(30, 2), torch.arange(3).repeat(10)
    names = ["0", "1", "2"]
    vis = visdom.Visdom(env="ch04", offline=True, log_to_filename=str(log_path))
    vis.scatter(X=points.numpy(), Y=(predicted + 1).numpy(), win="spiral predictions", opts={"legend": names})
    vis.stem(X=np.linspace(1.0, 0.1, 10), Y=np.arange(0, 300, 30), win="loss stems")
    vis.heatmap(X=torch.eye(3).numpy(), win="confusion", opts={"rownames": names, "columnnames": names})
    vis.image(torch.rand(1, 32, 2).numpy(), win="layer 0 weight")
    vis.text("<b>spiral MLP</b>", win="summary")
    return vis


EXPECTED_KINDS = {"spiral predictions": ["scatter"] * 3, "loss stems": ["scatter"], "confusion": ["heatmap"],
                  "layer 0 weight": ["image"], "summary": ["text"]}


def test_offline_visdom_writes_one_message_per_window(tmp_path):
    log_path = tmp_path / "ch04_windows.jsonl"
    _offline_windows(log_path)
    messages = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [endpoint for endpoint, _ in messages] == ["events"] * 5
    assert {m["win"]: [part["type"] for part in m["data"]] for _, m in messages} == EXPECTED_KINDS
    assert {m["eid"] for _, m in messages} == {"ch04"}
    stem = next(m for _, m in messages if m["win"] == "loss stems")["data"][0]
    assert stem["mode"] == "lines" and stem["y"][:3] == [0.0, 1.0, None]  # a segment from 0 to the value, a gap


def test_the_replayed_log_makes_the_five_windows_in_a_live_server(tmp_path):
    log_path = tmp_path / "ch04_windows.jsonl"
    _offline_windows(log_path)
    port = free_port()
    process = start_server(port, tmp_path / "envs", tmp_path / "visdom.log")
    try:
        url = f"http://127.0.0.1:{port}"
        address = urlsplit(url)
        live = visdom.Visdom(server=f"{address.scheme}://{address.hostname}", port=address.port, env="ch04",
                             use_incoming_socket=False, raise_exceptions=True)
        live.replay_log(str(log_path))
        windows = VisdomClient(url, "ch04").windows()
    finally:
        dashboard_server.stop_server(process)
    assert set(windows) == set(EXPECTED_KINDS)
    kinds = {win: w["type"] for win, w in windows.items()}
    assert kinds == {"spiral predictions": "plot", "loss stems": "plot", "confusion": "plot",
                     "layer 0 weight": "image", "summary": "text"}, json.dumps(kinds)


# §12: the notes' project template ------------------------------------------------------------


class _TemplateNetwork(torch.nn.Module):
    """The notes' My_Network: conv 3→64, BatchNorm, ReLU, 2×2 max-pool, Linear(64·14·14, 512)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(64)
        self.relu = torch.nn.ReLU()
        self.maxpool = torch.nn.MaxPool2d(kernel_size=2, stride=2)
        self.fc = torch.nn.Linear(64 * 14 * 14, 512)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(x.view(x.size(0), -1))


def test_the_template_network_fits_28_by_28_inputs_and_its_dataparallel_checkpoint_has_the_prefix():
    torch.manual_seed(0)
    model = torch.nn.DataParallel(_TemplateNetwork())
    assert model(torch.rand(4, 3, 28, 28)).shape == (4, 512)
    with pytest.raises(RuntimeError):
        _TemplateNetwork()(torch.rand(4, 3, 32, 32))  # 16·16 pooled pixels do not fit the Linear
    state = model.state_dict()
    assert all(k.startswith("module.") for k in state)
    torch.nn.DataParallel(_TemplateNetwork()).load_state_dict(state)
    with pytest.raises(RuntimeError, match="Missing key"):
        _TemplateNetwork().load_state_dict(state)


def test_the_notes_super_call_names_a_class_that_does_not_exist():
    class My_Network(torch.nn.Module):
        def __init__(self):
            super(network, self).__init__()  # noqa: F821 - the notes' line, as written

    with pytest.raises(NameError, match="network"):
        My_Network()
