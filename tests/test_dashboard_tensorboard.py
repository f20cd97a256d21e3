"""The Dashboard's TensorBoard output, read back with TensorBoard's own event reader."""
from __future__ import annotations

import socket

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from minikernel.course import tensorboard_server
from widgets import Dashboard
from widgets.dashboard_tensorboard import EVENT_PREFIX, resolve_logdir


def _read(run_dir):
    return EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "histograms": 0}).Reload()


def _train(dashboard, model, run, steps=6):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1)
    x, y = torch.randn(16, 2), torch.randint(0, 3, (16,))
    losses, norms = [], []
    for step in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        dashboard.log(step, run=run, loss=loss.item())
        losses.append(loss.item())
        norms.append(torch.linalg.vector_norm(model[0].weight.grad).item())
        opt.step()
    return x, losses, norms


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def test_scalars_histograms_and_graph_are_written_per_run(tmp_path, capsys):
    model = _model()
    dashboard = Dashboard(model, env="ch04", tensorboard=tmp_path, live=False, every=3, connect_timeout=0.05)
    x, losses, norms = _train(dashboard, model, "torch")
    dashboard.add_graph(x, run="torch")
    dashboard.close()
    assert "python -m minikernel tensorboard" in capsys.readouterr().out
    events = _read(tmp_path / "ch04" / "torch")
    tags = events.Tags()
    # torch's own numbers are the oracle: the loss and weight-gradient norm of each step.
    assert [e.step for e in events.Scalars("loss")] == list(range(6))
    assert [e.value for e in events.Scalars("loss")] == pytest.approx(losses, rel=1e-6)
    assert [e.value for e in events.Scalars("grad_norm/0.weight")] == pytest.approx(norms, rel=1e-6)
    assert {"activation/0", "activation/1", "activation/2", "weight/0.weight", "grad/2.bias"} <= set(tags["histograms"])
    # histograms at the first step and every 3rd record (steps 2 and 5)
    assert [e.step for e in events.Histograms("weight/0.weight")] == [0, 2, 5]
    assert events.Histograms("activation/0")[0].histogram_value.num == 16 * 8
    assert tags["graph"]
    # the trace run by add_graph is no training step: nothing extra was recorded
    assert dashboard.history.records == 6


def test_two_runs_two_directories_and_old_events_cleared(tmp_path):
    stale = tmp_path / "ch04" / "old"
    stale.mkdir(parents=True)
    (stale / (EVENT_PREFIX + "stale")).write_bytes(b"")
    (stale / "notes.txt").write_text("kept")
    model = _model()
    dashboard = Dashboard(model, env="ch04", tensorboard=tmp_path, live=False, connect_timeout=0.05)
    _train(dashboard, model, "torch", steps=2)
    _train(dashboard, model, "minikernel", steps=2)
    dashboard.close()
    assert not (stale / (EVENT_PREFIX + "stale")).exists() and (stale / "notes.txt").exists()
    assert dashboard.tensorboard.runs == []  # closed
    for run in ("torch", "minikernel"):
        assert len(_read(tmp_path / "ch04" / run).Scalars("loss")) == 2


def test_errors_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="tensorboard=True"):
        Dashboard(_model(), live=False, connect_timeout=0.05).add_graph(torch.zeros(1, 2))
    dashboard = Dashboard(live=False, tensorboard=tmp_path, connect_timeout=0.05)
    with pytest.raises(ValueError, match="no model is watched"):
        dashboard.add_graph(torch.zeros(1, 2))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        dashboard.tensorboard.add_graph(object(), torch.zeros(1, 2))
    with pytest.raises(TypeError, match="True or a directory"):
        resolve_logdir(3)


def test_default_logdir_follows_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(tensorboard_server.LOGDIR_VARIABLE, str(tmp_path))
    assert resolve_logdir(True) == tmp_path
    monkeypatch.delenv(tensorboard_server.LOGDIR_VARIABLE)
    assert resolve_logdir(True) == tensorboard_server.ROOT / "runs"


def test_the_command_refuses_a_busy_port(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert tensorboard_server.main(["--logdir", str(tmp_path), "--port", str(port)]) == 2
    assert "in use" in capsys.readouterr().out
