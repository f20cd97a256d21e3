"""The live dashboard (widgets/dashboard*.py, widgets/visdom_client.py) and its
server (minikernel/course/dashboard_server.py), without a browser.

The recorded numbers are checked against torch computing the same statistics on
the same tensors; the inline fallback runs with no server; a real visdom server
(from the offline front-end files) receives the windows through its HTTP API.
No exercise marker: these pass in both modes.
"""
from __future__ import annotations

import math
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from minikernel.course import dashboard_server
from widgets import dashboard_inline
from widgets.dashboard import Dashboard, leaf_names
from widgets.dashboard_log import DashboardLog, activation_stats, grad_norm, panels
from widgets.visdom_client import VisdomClient, VisdomRenderer, is_visdom, resolve_server

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.xdist_group("dashboard")  # one visdom server (`visdom_url`) per worker that runs the module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def no_server(monkeypatch) -> str:
    """A URL where nothing listens (so every Dashboard draws inline)."""
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("MINIKERNEL_VISDOM_URL", url)
    return url


def mlp() -> torch.nn.Sequential:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(32, 2, generator=g), torch.randint(0, 3, (32,), generator=g)


# ------------------------------------------------------------- the data model


def test_leaf_names():
    assert leaf_names(["", "0", "1", "1.fc", "1.act", "2"]) == ["0", "1.fc", "1.act", "2"]
    assert leaf_names([""]) == [""]
    assert leaf_names(["", "enc", "enc.0", "encoder"]) == ["enc.0", "encoder"]  # "enc" is no prefix of "encoder"


def test_recorded_statistics_equal_torch_on_the_same_tensors(no_server):
    model, (x, y) = mlp(), batch()
    dashboard = Dashboard(model, env="test", bins=10)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    dashboard.log(0, loss=loss.item())

    h0 = model[0](x)  # the same ops on the same input: the same float32 values
    h1 = model[1](h0)
    h2 = model[2](h1)
    hist = dashboard.history
    assert dashboard.watched == ["0", "1", "2"]
    for name, h in (("0", h0), ("1", h1), ("2", h2)):
        assert hist.activation_mean[name].values == [h.mean().item()]
        assert hist.activation_std[name].values == [h.std().item()]
        counts, edges = torch.histogram(h.detach().double().reshape(-1), bins=10,
                                        range=(h.min().item(), h.max().item()))
        assert list(hist.histograms[name].fractions) == (counts / h.numel()).tolist()
        np.testing.assert_allclose(hist.histograms[name].edges, edges.tolist(), rtol=1e-12)
        assert hist.histograms[name].step == 0
    for name, p in model.named_parameters():
        assert math.isclose(hist.grad_norms[name].values[0], p.grad.norm().item(), rel_tol=1e-6)
    assert hist.scalars == {"loss": {"loss": hist.scalars["loss"]["loss"]}}
    assert hist.scalars["loss"]["loss"].steps == [0]
    assert hist.scalars["loss"]["loss"].values == [loss.item()]


def test_the_last_forward_before_log_is_recorded_and_cleared(no_server):
    model, (x, _y) = mlp(), batch()
    dashboard = Dashboard(model, env="test")
    model(x * 100)
    out = model(x)
    dashboard.log(3)
    dashboard.log(4)  # no forward call in between: no activation record
    assert dashboard.history.activation_mean["2"].steps == [3]
    assert dashboard.history.activation_mean["2"].values == [out.mean().item()]
    assert dashboard.history.grad_norms == {}  # no backward yet


def test_sixteen_bit_outputs_are_summarized_in_float32():
    h = (torch.randn(1000) * 300).to(torch.float16)
    stats = activation_stats(h)
    assert stats.mean == h.float().mean().item()
    assert stats.std == h.float().std().item()
    assert math.isclose(grad_norm(h), torch.linalg.vector_norm(h.float()).item(), rel_tol=1e-6)


def test_non_finite_values_are_recorded_but_not_plotted():
    h = torch.tensor([1.0, 2.0, float("inf"), 3.0])
    stats = activation_stats(h, bins=4)
    assert stats.mean == math.inf and math.isnan(stats.std)
    assert math.isclose(sum(stats.fractions), 0.75)  # the histogram counts the finite values
    log = DashboardLog()
    log.record(0, {("scale", "scale"): 2.0 ** 16}, {"fc": stats}, {"w": math.nan})
    log.record(1, {("scale", "scale"): math.inf}, {"fc": stats}, {"w": 1.0})
    by_id = {p.id: p for p in panels(log)}
    assert by_id["scalar-scale"].traces == {"scale": ([0], [2.0 ** 16])}
    assert by_id["activation-mean"].traces == {"fc": ([], [])}
    assert by_id["grad-norm"].traces == {"w": ([1], [1.0])}


def test_a_single_element_has_nan_std_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = activation_stats(torch.tensor([2.5]), bins=1)
    assert stats.mean == 2.5 and math.isnan(stats.std)
    assert stats.edges == (2.0, 3.0) and stats.fractions == (1.0,)


def test_bad_arguments_say_what_to_fix(no_server):
    with pytest.raises(ValueError, match="every must be a positive int"):
        Dashboard(env="test", every=0)
    with pytest.raises(ValueError, match=r"not in model.named_modules\(\)"):
        Dashboard(mlp(), env="test", layers=["fc9"])
    with pytest.raises(TypeError, match="step must be an int"):
        Dashboard(env="test").log(1.5, loss=1.0)
    with pytest.raises(ValueError, match="empty tensor"):
        activation_stats(torch.empty(0))


def test_runs_learning_rates_and_chosen_layers(no_server):
    model = mlp()
    opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": 0.1},
                           {"params": model[2].parameters(), "lr": 0.01}])
    dashboard = Dashboard(model, env="test", optimizer=opt, layers=["1"])
    model(batch()[0])
    dashboard.log(0, run="a", loss=1.0)
    dashboard.log(0, run="b", loss=2.0)
    assert dashboard.watched == ["1"]
    assert set(dashboard.history.activation_mean) == {"a: 1"}  # the run names its layers' lines
    assert dashboard.history.scalars["loss"]["a"].values == [1.0]
    assert dashboard.history.scalars["loss"]["b"].values == [2.0]
    assert dashboard.history.scalars["lr[0]"]["a"].values == [0.1]
    assert dashboard.history.scalars["lr[1]"]["b"].values == [0.01]


# --------------------------------------------------------- hooks and removal


def test_remove_and_the_context_manager_detach_every_hook(no_server):
    model = mlp()
    before = [len(m._forward_hooks) for m in model.modules()]
    with Dashboard(model, env="test") as dashboard:
        assert [len(m._forward_hooks) for m in model.modules()] == [0, 1, 1, 1]
        model(batch()[0])
        dashboard.log(0)
    assert [len(m._forward_hooks) for m in model.modules()] == before == [0, 0, 0, 0]
    model(batch()[0])
    dashboard.log(1)
    assert dashboard.history.activation_mean["0"].steps == [0]  # nothing recorded after removal
    assert dashboard.watched == []


def test_watch_again_replaces_the_hooks(no_server):
    model = mlp()
    dashboard = Dashboard(model, env="test")
    dashboard.watch(model)
    assert [len(m._forward_hooks) for m in model.modules()] == [0, 1, 1, 1]
    dashboard.remove()


class HookOnlyModule:
    """Only the public hook API a minikernel.nn.Module shares with torch."""

    def __init__(self, name: str = "", children: dict | None = None, weight: torch.Tensor | None = None):
        self._children, self._hooks, self.weight = children or {}, {}, weight

    def named_modules(self, prefix: str = ""):
        yield prefix, self
        for name, child in self._children.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self):
        for name, module in self.named_modules():
            if module.weight is not None:
                yield (f"{name}.weight" if name else "weight"), module.weight

    def register_forward_hook(self, hook):
        key = object()
        self._hooks[key] = hook
        return type("Handle", (), {"remove": lambda _self: self._hooks.pop(key, None)})()

    def __call__(self, x):
        out = x
        for child in self._children.values():
            out = child(out)
        if self.weight is not None:
            out = out @ self.weight
        for hook in list(self._hooks.values()):
            hook(self, (x,), out)
        return out


def test_a_model_with_only_the_public_hook_api_is_watched(no_server):
    w = torch.randn(2, 2, requires_grad=True)
    model = HookOnlyModule(children={"a": HookOnlyModule(weight=w), "b": HookOnlyModule()})
    dashboard = Dashboard(model, env="test")
    out = model(torch.ones(3, 2))
    out.sum().backward()
    dashboard.log(0)
    assert dashboard.watched == ["a", "b"]
    assert dashboard.history.activation_mean["b"].values == [out.mean().item()]
    assert math.isclose(dashboard.history.grad_norms["a.weight"].values[0], w.grad.norm().item(), rel_tol=1e-6)
    dashboard.remove()
    assert model._children["a"]._hooks == {} and model._children["b"]._hooks == {}


def test_an_unfinished_module_exercise_leaves_scalars_only(no_server, capsys):
    class Stub(HookOnlyModule):
        def named_modules(self, prefix=""):
            raise NotImplementedError("exercise 4.1 (register_module) is not implemented yet")

    dashboard = Dashboard(Stub(), env="test")
    dashboard.log(0, loss=1.0)
    assert "cannot watch this model yet (exercise 4.1 (register_module) is not implemented yet)" \
        in capsys.readouterr().out
    assert dashboard.watched == [] and dashboard.history.scalars["loss"]["loss"].values == [1.0]


def test_an_output_without_a_tensor_or_with_an_empty_one_is_skipped(no_server):
    class Odd(torch.nn.Module):
        def forward(self, x):
            return (torch.zeros(0), x) if x.numel() > 1 else None

    model = torch.nn.Sequential(Odd())
    dashboard = Dashboard(model, env="test")
    model(torch.ones(2))
    model(torch.ones(1))
    dashboard.log(0)
    assert dashboard.history.activation_mean == {}


def test_a_failing_summary_warns_once_and_never_stops_the_forward_pass(no_server, monkeypatch):
    import widgets.dashboard as dashboard_module

    def broken(tensor, bins):
        raise RuntimeError("boom")

    monkeypatch.setattr(dashboard_module, "activation_stats", broken)
    model, (x, _y) = mlp(), batch()
    dashboard = Dashboard(model, env="test", layers=["0"])
    with pytest.warns(RuntimeWarning, match="not recording layer '0': RuntimeError\\('boom'\\)") as caught:
        out = model(x)
        model(x)
    assert len(caught) == 1 and out.shape == (32, 3)


# --------------------------------------------------------------- inline mode


def test_no_server_means_inline_and_says_so(no_server, capsys):
    model, (x, y) = mlp(), batch()
    dashboard = Dashboard(model, env="test", connect_timeout=0.2)
    assert dashboard.mode == "inline"
    assert f"no visdom server at {no_server} (start one with `make dashboard`); drawing inline" \
        in capsys.readouterr().out
    for step in range(3):
        model.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        dashboard.log(step, loss=loss.item())
    figure = dashboard.figure()
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == ["loss", "activation mean per layer", "activation std per layer",
                      "activation histograms (step 2)", "gradient norm per parameter"]
    assert [len(line.get_xdata()) for line in figure.axes[1].lines] == [3, 3, 3]
    assert figure.axes[0].get_yscale() == "log" and figure.axes[4].get_yscale() == "log"
    assert [t.get_text() for t in figure.axes[1].get_legend().get_texts()] == \
        ["0 (Linear)", "1 (ReLU)", "2 (Linear)"]


def test_live_inline_figure_is_displayed_once_then_updated_in_place(no_server, monkeypatch):
    shown = []

    class Handle:
        def update(self, image):
            shown.append(("update", image))

    def display(image, display_id=False):
        shown.append(("display", image))
        return Handle()

    import IPython.display

    monkeypatch.setattr(dashboard_inline, "in_jupyter", lambda: True)
    monkeypatch.setattr(IPython.display, "display", display)
    dashboard = Dashboard(env="test")
    dashboard._inline.min_interval_s = 0.0
    for step in range(3):
        dashboard.log(step, loss=1.0 / (step + 1))
    assert [kind for kind, _ in shown] == ["display", "update", "update"]
    assert all(image.data.startswith(b"\x89PNG") for _, image in shown)
    assert [ax.get_title() for ax in dashboard._inline.figure.axes] == ["loss"]  # one figure, redrawn
    dashboard.show()  # a new output, e.g. in a later cell
    assert shown[-1][0] == "display"


def test_not_live_draws_nothing_until_show(no_server, monkeypatch):
    shown = []
    import IPython.display

    monkeypatch.setattr(dashboard_inline, "in_jupyter", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda image, display_id=False: shown.append(image))
    dashboard = Dashboard(env="test", live=False)
    for step in range(3):
        dashboard.log(step, loss=1.0)
    dashboard.flush()
    assert shown == []
    dashboard.show()
    assert len(shown) == 1 and shown[0].data.startswith(b"\x89PNG")


# ------------------------------------------------------------ a real server


def test_the_front_end_files_are_installed():
    assert dashboard_server.missing_assets() == [], "run make setup"


def test_missing_front_end_files_say_run_make_setup(tmp_path, monkeypatch, capsys):
    (tmp_path / "static").mkdir()
    (tmp_path / "VERSION").write_text("0.2.4")
    monkeypatch.setattr(dashboard_server, "visdom_static_dir", lambda: tmp_path / "static")
    missing = dashboard_server.missing_assets()
    assert "js/plotly-plotly.min.js" in missing and "version.built" in missing
    assert dashboard_server.main(["--port", str(free_port())]) == 1
    assert "run make setup" in capsys.readouterr().out
    url, process, message = dashboard_server.start_beside_lab(free_port())
    assert (url, process) == (None, None) and "run make setup" in message


def start_server(port: int, env_path: Path, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "minikernel", "dashboard", "--port", str(port), "--env-path", str(env_path)],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not is_visdom(f"http://127.0.0.1:{port}"):
        if process.poll() is not None or time.monotonic() > deadline:
            dashboard_server.stop_server(process)
            pytest.fail(f"visdom did not start:\n{log.read_text()}")
        time.sleep(0.2)
    return process


@pytest.fixture(scope="module")
def visdom_url(tmp_path_factory):
    base = tmp_path_factory.mktemp("visdom")
    port = free_port()
    process = start_server(port, base / "envs", base / "visdom.log")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        dashboard_server.stop_server(process)


def test_windows_and_points_arrive_in_visdom(visdom_url, capsys):
    model, (x, y) = mlp(), batch()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Dashboard(model, env="test_http", server=visdom_url, optimizer=opt) as dashboard:
        assert dashboard.mode == "visdom"
        for step in range(4):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            dashboard.log(step, loss=loss.item(), skipped=float(step == 2))
            opt.step()
    assert f"streaming to visdom, env 'test_http': open {visdom_url}/env/test_http" in capsys.readouterr().out
    windows = VisdomClient(visdom_url, "test_http").windows()
    assert set(windows) == {"scalar-loss", "scalar-skipped", "scalar-lr", "activation-mean", "activation-std",
                            "activation-histogram", "grad-norm"}
    traces = {win: {t["name"]: t for t in w["content"]["data"]} for win, w in windows.items()}
    assert traces["scalar-loss"]["loss"]["x"] == [0, 1, 2, 3]
    assert traces["scalar-loss"]["loss"]["y"] == dashboard.history.scalars["loss"]["loss"].values
    assert traces["scalar-skipped"]["skipped"]["y"] == [0.0, 0.0, 1.0, 0.0]
    assert set(traces["activation-mean"]) == {"0 (Linear)", "1 (ReLU)", "2 (Linear)"}
    assert traces["activation-mean"]["2 (Linear)"]["y"] == dashboard.history.activation_mean["2"].values
    assert traces["grad-norm"]["2.bias"]["y"] == dashboard.history.grad_norms["2.bias"].values
    assert windows["activation-histogram"]["title"] == "activation histograms (step 3)"
    assert len(traces["activation-histogram"]["1 (ReLU)"]["x"]) == 31  # 30 bins: 31 edges
    assert windows["scalar-loss"]["content"]["layout"]["yaxis"]["type"] == "log"


def test_a_new_dashboard_clears_its_env_and_every_batches_the_updates(visdom_url):
    first = Dashboard(env="test_reset", server=visdom_url)
    first.log(0, old=1.0)
    second = Dashboard(env="test_reset", server=visdom_url, every=3)
    for step in range(4):
        second.log(step, accuracy=float(step))
    windows = VisdomClient(visdom_url, "test_reset").windows()
    assert list(windows) == ["scalar-accuracy"]  # the old run's window is gone
    assert windows["scalar-accuracy"]["content"]["data"][0]["x"] == [0, 1, 2]  # step 3 waits for the 6th call
    second.flush()
    windows = VisdomClient(visdom_url, "test_reset").windows()
    assert windows["scalar-accuracy"]["content"]["data"][0]["x"] == [0, 1, 2, 3]
    assert windows["scalar-accuracy"]["content"]["data"][0]["y"] == [0.0, 1.0, 2.0, 3.0]


def test_windows_are_sent_whole_at_close_and_every_resync_seconds(visdom_url, monkeypatch):
    sent = []
    post = VisdomClient.post
    monkeypatch.setattr(VisdomClient, "post",
                        lambda self, endpoint, payload: sent.append((endpoint, payload.get("win")))
                        or post(self, endpoint, payload))
    dashboard = Dashboard(env="test_resync", server=visdom_url)
    dashboard._visdom.resync_seconds = 1e9
    for step in range(3):
        dashboard.log(step, loss=float(step + 1))
    assert [endpoint for endpoint, win in sent if win == "scalar-loss"] == ["events", "update", "update"]
    sent.clear()
    dashboard._visdom.resync_seconds = 1e-9  # due at once: the next log sends the window whole
    dashboard.log(3, loss=4.0)
    assert sent == [("events", "scalar-loss")]
    sent.clear()
    dashboard._visdom.resync_seconds = 1e9
    dashboard.close()  # nothing pending, and still the whole window: it repairs a page that dropped a patch
    assert sent == [("events", "scalar-loss")]
    window = VisdomClient(visdom_url, "test_resync").windows()["scalar-loss"]
    assert window["content"]["data"][0]["x"] == [0, 1, 2, 3]
    assert window["content"]["data"][0]["y"] == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="resync_seconds must be positive"):
        VisdomRenderer(VisdomClient(visdom_url, "test_resync"), resync_seconds=0)


def test_a_server_that_goes_away_switches_to_inline(tmp_path, capsys):
    port = free_port()
    process = start_server(port, tmp_path / "envs", tmp_path / "visdom.log")
    try:
        dashboard = Dashboard(env="test_gone", server=f"http://127.0.0.1:{port}", connect_timeout=0.2)
        dashboard.log(0, loss=1.0)
        assert dashboard.mode == "visdom"
    finally:
        dashboard_server.stop_server(process)
    dashboard.log(1, loss=0.5)  # no exception, no hang
    assert dashboard.mode == "inline"
    assert "the visdom server stopped answering" in capsys.readouterr().out
    assert dashboard.history.scalars["loss"]["loss"].values == [1.0, 0.5]


def test_lab_reuses_a_running_visdom(visdom_url):
    port = int(visdom_url.rsplit(":", 1)[1])
    url, process, message = dashboard_server.start_beside_lab(port)
    assert (url, process) == (visdom_url, None)
    assert message == f"using the visdom server already running at {visdom_url}"


def test_lab_moves_to_the_next_free_port_when_the_port_is_taken():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        url, process, message = dashboard_server.start_beside_lab(port)
        try:
            assert process is not None and url is not None
            assert url != f"http://127.0.0.1:{port}" and is_visdom(url)
            assert message == f"visdom is serving the dashboards at {url}"
        finally:
            if process is not None:
                dashboard_server.stop_server(process)
    assert process.returncode == 0  # stopped cleanly by SIGTERM


def test_the_server_refuses_a_port_taken_by_something_else(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert dashboard_server.main(["--port", str(busy.getsockname()[1])]) == 2
    assert "is in use by something else; choose another with --port" in capsys.readouterr().out


def test_the_url_variable_is_where_dashboards_look(monkeypatch):
    monkeypatch.setenv("MINIKERNEL_VISDOM_URL", "http://127.0.0.1:9999/")
    assert resolve_server(None) == "http://127.0.0.1:9999"
    assert resolve_server("http://127.0.0.1:1234") == "http://127.0.0.1:1234"
    monkeypatch.delenv("MINIKERNEL_VISDOM_URL")
    assert resolve_server(None) == "http://127.0.0.1:8097"


def test_a_window_closed_in_the_page_during_training_comes_back(visdom_url, capsys):
    # The page's × on a window sends visdom "close" over its socket; the HTTP /close
    # below does the same to the server's state. The stock server then answered the
    # next /update with HTTP 500 (KeyError 'layout') and the dashboard fell back inline.
    model, (x, y) = mlp(), batch()
    dashboard = Dashboard(model, env="test_closed", server=visdom_url)
    client = VisdomClient(visdom_url, "test_closed")
    for step in range(6):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        dashboard.log(step, loss=float(step))
        if step == 2:
            client.post("close", {"eid": "test_closed", "win": "scalar-loss"})
            assert "scalar-loss" not in client.windows()
    assert dashboard.mode == "visdom", capsys.readouterr().out
    window = client.windows()["scalar-loss"]
    assert window["content"]["data"][0]["x"] == [3, 4, 5]  # made again from the points sent since
    assert window["content"]["layout"]["yaxis"]["type"] == "log"


def test_an_update_without_layout_to_a_closed_window_is_no_server_error(visdom_url):
    # What visdom's own client sends for vis.line(..., update="append"): no layout.
    client = VisdomClient(visdom_url, "test_nolayout")
    client.reset_env()
    trace = {"x": [0], "y": [1.0], "name": "a", "type": "scatter", "mode": "lines"}
    client.post("events", {"eid": "test_nolayout", "win": "w", "layout": {}, "data": [trace]})
    client.post("close", {"eid": "test_nolayout", "win": "w"})
    assert client.post("update", {"eid": "test_nolayout", "win": "w", "name": None, "append": True,
                                  "data": [dict(trace, x=[1], y=[2.0])]}) == "w"
    assert client.windows()["w"]["content"]["data"][0]["x"] == [1]


def test_two_runs_never_share_a_line(visdom_url):
    torch_model, (x, y) = mlp(), batch()
    second = mlp()
    dashboard = Dashboard(torch_model, env="test_runs", server=visdom_url)
    for run, model in (("torch", torch_model), ("minikernel", second)):
        dashboard.watch(model)
        for step in range(3):
            model.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            dashboard.log(step, run=run, loss=1.0 + step)
    windows = VisdomClient(visdom_url, "test_runs").windows()
    for win in ("scalar-loss", "activation-mean", "activation-std", "grad-norm"):
        lines = {t["name"]: t["x"] for t in windows[win]["content"]["data"]}
        assert all(xs == [0, 1, 2] for xs in lines.values()), (win, lines)  # no line goes back to step 0
    names = {t["name"] for t in windows["activation-mean"]["content"]["data"]}
    assert names == {f"{run}: {layer}" for run in ("torch", "minikernel")
                     for layer in ("0 (Linear)", "1 (ReLU)", "2 (Linear)")}
    assert {t["name"] for t in windows["scalar-loss"]["content"]["data"]} == {"torch", "minikernel"}
