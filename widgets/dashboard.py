"""A live training dashboard built from module hooks (chapter 04).

A :class:`Dashboard` hangs a forward hook on every leaf module of a model and, at
each :meth:`Dashboard.log` call, records the loss and any other scalars, each
layer's activation mean/std/histogram and each parameter's gradient norm
(:mod:`widgets.dashboard_log`). It streams them to a visdom server
(:mod:`widgets.visdom_client`; ``make dashboard`` starts one, ``make lab`` starts
one beside JupyterLab) or, when none answers, draws the same panels with
matplotlib (:mod:`widgets.dashboard_inline`). With ``tensorboard=True`` it also
writes them as TensorBoard event files with ``SummaryWriter``
(:mod:`widgets.dashboard_tensorboard`; ``python -m minikernel tensorboard`` shows them).

It uses only the public hook API (``named_modules``, ``register_forward_hook``,
``named_parameters``, the handles' ``remove``), so it watches a
``minikernel.nn.Module`` exactly as it watches a ``torch.nn.Module``.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

from .dashboard_inline import InlineRenderer, draw, in_jupyter
from .dashboard_log import ActivationStats, DashboardLog, Panel, activation_stats, first_tensor, grad_norm, panels
from .dashboard_tensorboard import TensorBoardWriter, parameter_tensors, resolve_logdir
from .visdom_client import VisdomClient, VisdomRenderer, VisdomUnavailable, is_visdom, resolve_server


def leaf_names(names: Sequence[str]) -> list[str]:
    """The names (from ``named_modules()``) of modules without submodules.

    ``"0"`` is a parent of ``"0.fc"``; the root (``""``) is a leaf only when it is
    the only module.
    """
    return [n for n in names if not any(m != n and (n == "" or m.startswith(n + ".")) for m in names)]


class Dashboard:
    r"""Watch a model train: activations, gradients and scalars, live in visdom or inline.

    Args:
        model (torch.nn.Module or minikernel.nn.Module, optional): the model whose
            leaf modules get a forward hook. ``None`` logs scalars only. Default: ``None``.
        env (str, optional): the visdom environment, one per chapter (``"ch04"``);
            its windows are cleared when the dashboard starts. Default: ``"main"``.
        server (str, optional): visdom's URL. Default: ``$MINIKERNEL_VISDOM_URL``
            if set (``make lab`` sets it), else ``"http://127.0.0.1:8097"``.
        optimizer (torch.optim.Optimizer, optional): if given, every :meth:`log`
            also records the learning rate (``lr``, or ``lr[i]`` per param group).
            Default: ``None``.
        layers (Sequence[str], optional): names from ``model.named_modules()`` to
            watch instead of every leaf module. Default: ``None`` (the leaves).
        bins (int, optional): bins of the activation histograms. Default: ``30``.
        every (int, optional): send to the renderer every ``every``-th :meth:`log`
            call; every call is recorded. Default: ``1``.
        log_y (Iterable[str], optional): scalars drawn on a log y axis (gradient
            norms always are). Default: ``("loss",)``.
        live (bool, optional): inline mode only: in Jupyter, show one figure at the
            first :meth:`log` and update it in place (at most once a second, and
            after each cell); ``False`` draws only when :meth:`show` is called.
            Default: ``True``.
        connect_timeout (float, optional): seconds to wait for the server at start;
            each later request may take 4x this. Default: ``0.5``.
        tensorboard (bool or str or Path, optional): also write every record with
            ``torch.utils.tensorboard.SummaryWriter`` under ``<dir>/<env>/<run>``:
            scalars and gradient norms each step, histograms of activations,
            weights and gradients every ``every``-th step, the graph through
            :meth:`add_graph`. ``True`` uses ``$MINIKERNEL_TENSORBOARD_DIR`` or the
            repository's ``runs/`` (what ``python -m minikernel tensorboard``
            serves); the env's old event files are deleted. Default: ``None`` (off).

    The hook it registers on each watched module is
    ``hook(module, args, output) -> None``: it summarizes ``output`` (the first
    tensor of a tuple) and keeps the summary until the next :meth:`log`, which
    records it at that step. Gradient norms are read from ``param.grad`` of
    ``model.named_parameters()`` when :meth:`log` is called, so call it after
    ``backward()`` and before ``zero_grad()``.

    Attributes:
        watched (list[str]): the names of the hooked modules (``model.named_modules()``
            names; the model's class name for a model without submodules).
        mode (str): ``"visdom"`` or ``"inline"``; it becomes ``"inline"`` (and says
            so) if the server stops answering during training.
        tensorboard (TensorBoardWriter or None): the event-file writer, if asked for.
        history (DashboardLog): everything recorded so far.

    Example::

        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> with Dashboard(model, env="ch04", optimizer=opt) as dashboard:
        ...     for step in range(100):
        ...         opt.zero_grad()
        ...         loss = torch.nn.functional.cross_entropy(model(x), y)
        ...         loss.backward()
        ...         dashboard.log(step, loss=loss.item())
        ...         opt.step()
        Dashboard: no visdom server at http://127.0.0.1:8097 (start one with `make dashboard`); drawing inline with matplotlib
    """

    def __init__(self, model: Any = None, *, env: str = "main", server: str | None = None,
                 optimizer: Any = None, layers: Sequence[str] | None = None, bins: int = 30,
                 every: int = 1, log_y: Iterable[str] = ("loss",), live: bool = True,
                 connect_timeout: float = 0.5, tensorboard: bool | str | Path | None = None):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive int, got {every!r}")
        if bins < 1:
            raise ValueError(f"bins must be at least 1, got {bins}")
        self.env, self.optimizer, self.bins, self.every = env, optimizer, bins, every
        self.server = resolve_server(server)
        self.log_y = frozenset(log_y)
        self.history = DashboardLog()
        self.watched: list[str] = []
        self._labels: dict[str, str] = {}  # layer name -> "name (ModuleType)" for the legends
        self._model = None
        self._handles: list[Any] = []
        self._pending: dict[str, ActivationStats] = {}
        self._warned: set[str] = set()
        self._inline = InlineRenderer(live=live)
        self._visdom: VisdomRenderer | None = None
        self._callback_registered = False
        self._unsent = False  # logged since the last render
        self._connect(connect_timeout)
        self._tracing = False
        self._raw: dict[str, Any] = {}  # layer -> its last output, for TensorBoard's histograms
        self.tensorboard: TensorBoardWriter | None = None
        if tensorboard is not None and tensorboard is not False:
            self.tensorboard = TensorBoardWriter(resolve_logdir(tensorboard), env)
            print(f"Dashboard: also writing TensorBoard event files to {self.tensorboard.root} "
                  "(view them with `python -m minikernel tensorboard`)")
        if model is not None:
            self.watch(model, layers)
        self._register_after_cell()

    # ------------------------------------------------------------------ set-up
    @property
    def mode(self) -> str:
        return "visdom" if self._visdom is not None else "inline"

    @property
    def url(self) -> str:
        """The page showing this dashboard's env (meaningful in visdom mode)."""
        return f"{self.server}/env/{self.env}"

    def _connect(self, timeout: float) -> None:
        client = VisdomClient(self.server, self.env, timeout=4 * timeout)
        try:
            if not is_visdom(self.server, timeout):
                raise VisdomUnavailable("no answer")
            client.reset_env()
        except (VisdomUnavailable, ValueError):
            print(f"Dashboard: no visdom server at {self.server} (start one with `make dashboard`); "
                  "drawing inline with matplotlib")
            return
        self._visdom = VisdomRenderer(client)
        print(f"Dashboard: streaming to visdom, env {self.env!r}: open {self.url}")

    def watch(self, model: Any, layers: Sequence[str] | None = None) -> None:
        """Hook ``model``'s leaf modules (or ``layers``), replacing any earlier hooks."""
        self.remove()
        self._model = model
        try:
            modules = dict(model.named_modules())
            names = list(layers) if layers is not None else leaf_names(list(modules))
            unknown = [n for n in names if n not in modules]
            if unknown:
                raise ValueError(f"layers {unknown} are not in model.named_modules(): "
                                 f"use names from {sorted(modules)}")
            for name in names:
                key = name or type(model).__name__
                self._handles.append(modules[name].register_forward_hook(self._hook(key)))
                self.watched.append(key)
                self._labels[key] = f"{key} ({type(modules[name]).__name__})" if name else key
        except NotImplementedError as exc:  # a minikernel.nn stub the learner has not written yet
            self.remove()
            self._model = None
            print(f"Dashboard: cannot watch this model yet ({exc}); logging scalars only")

    def _hook(self, name: str):
        def hook(module: Any, args: tuple, output: Any) -> None:
            if self._tracing:  # add_graph's torch.jit.trace call is no training step
                return
            try:
                tensor = first_tensor(output)
                if tensor is not None and tensor.numel():
                    self._pending[name] = activation_stats(tensor, self.bins)
                    if self.tensorboard is not None:
                        self._raw[name] = tensor.detach()
            except Exception as exc:  # noqa: BLE001 - a dashboard must never stop training
                self._warn_once(name, f"Dashboard: not recording layer {name!r}: {exc!r}")
        return hook

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    # --------------------------------------------------------------- recording
    def log(self, step: int, run: str | None = None, **scalars: float) -> None:
        """Record step ``step``: ``scalars``, the activations seen since the last
        call, the current gradient norms and (with an optimizer) the learning rate.

        Args:
            step (int): the x coordinate of this record.
            run (str, optional): a name for this run's lines: each scalar gets a
                window, and each run a line in it (to compare runs); the layers'
                and parameters' lines get the run's name in front ("torch: 0
                (Linear)"), so two runs never share a line. Default: the scalar's
                own name, and the layers' and parameters' own names.
            **scalars (float): values to plot, e.g. ``loss=loss.item()``,
                ``scale=scaler.get_scale()``; non-finite values are kept in
                :attr:`history` and left out of the plots.
        """
        values = {(name, run or name): float(value) for name, value in scalars.items()}
        activations, norms = self._pending, self._grad_norms()
        raw, self._raw = self._raw, {}
        if run is not None:  # each run its own lines, named after it in the legends
            activations = {self._run_label(run, k): v for k, v in activations.items()}
            norms = {f"{run}: {k}": v for k, v in norms.items()}
        if self.optimizer is not None:
            groups = self.optimizer.param_groups
            for i, group in enumerate(groups):
                name = "lr" if len(groups) == 1 else f"lr[{i}]"
                values[(name, run or name)] = float(group["lr"])
        self.history.record(step, values, activations, norms)
        self._pending = {}
        self._unsent = True
        if self.tensorboard is not None:
            self._write_tensorboard(step, run, values, norms, raw)
        if self.history.records % self.every == 0:
            self._render()

    def _write_tensorboard(self, step: int, run: str | None, values: dict, norms: dict, raw: dict) -> None:
        # The run prefix of the visdom lines is TensorBoard's run directory instead.
        prefix = f"{run}: " if run is not None else ""
        scalars = {name: v for (name, _trace), v in values.items()}
        scalars.update({f"grad_norm/{k[len(prefix):]}": v for k, v in norms.items()})
        self.tensorboard.scalars(step, run, scalars)
        if self.history.records % self.every == 0 or self.history.records == 1:
            tensors = {f"activation/{layer}": t for layer, t in raw.items()}
            if self._model is not None:
                try:
                    tensors.update(parameter_tensors(self._model.named_parameters()))
                except NotImplementedError:  # a minikernel stub not written yet: no histograms
                    pass
            self.tensorboard.histograms(step, run, tensors)

    def add_graph(self, example_input: Any, run: str | None = None) -> None:
        """Write the watched model's graph for TensorBoard's Graphs tab (``SummaryWriter.add_graph``).

        Args:
            example_input (torch.Tensor or tuple): what to call the model on while
                ``torch.jit.trace`` records it.
            run (str, optional): the run whose directory gets the graph. Default: ``None``.

        Raises ValueError without ``tensorboard=`` or a model, TypeError for a
        model that is no ``torch.nn.Module``.
        """
        if self.tensorboard is None:
            raise ValueError("this Dashboard writes no TensorBoard files: create it with tensorboard=True")
        if self._model is None:
            raise ValueError("no model is watched: pass one to Dashboard(model, ...) or watch(model)")
        self._tracing = True
        try:
            self.tensorboard.add_graph(self._model, example_input, run)
        finally:
            self._tracing = False

    def _run_label(self, run: str, layer: str) -> str:
        key = f"{run}: {layer}"
        self._labels.setdefault(key, f"{run}: {self._labels.get(layer, layer)}")
        return key

    def _grad_norms(self) -> dict[str, float]:
        if self._model is None:
            return {}
        try:
            return {name: grad_norm(p.grad) for name, p in self._model.named_parameters() if p.grad is not None}
        except NotImplementedError as exc:
            self._warn_once("grad", f"Dashboard: no gradient norms yet ({exc})")
            return {}

    def panels(self) -> list[Panel]:
        """The plots both renderers draw, from everything recorded so far."""
        return panels(self.history, self.log_y, self._labels)

    # ---------------------------------------------------------------- drawing
    def _render(self, whole: bool = False) -> None:
        """Draw what changed; ``whole``: send every visdom window whole (it repairs
        a page that dropped a patch, see :class:`~widgets.visdom_client.VisdomRenderer`)."""
        self._unsent = False
        if self._visdom is not None:
            try:
                (self._visdom.sync if whole else self._visdom.render)(self.panels())
                return
            except VisdomUnavailable as exc:
                self._visdom = None
                print(f"Dashboard: the visdom server stopped answering ({exc}); drawing inline from now on")
        self._inline.render(self.panels)

    def flush(self, whole: bool = False) -> None:
        """Send what is not drawn yet (after ``every`` > 1, or a throttled inline redraw).

        Args:
            whole (bool, optional): send every visdom window whole, pending or not,
                as :meth:`close` does. Default: ``False``.
        """
        if self.tensorboard is not None:
            self.tensorboard.flush()
        if self._visdom is not None:
            if self._unsent or whole:
                self._render(whole)
        else:
            self._inline.flush(self.panels)

    def figure(self):
        """A new matplotlib Figure of everything recorded so far (in either mode)."""
        return draw(self.panels())

    def show(self) -> None:
        """Draw everything now: inline, the figure; with visdom, where to look."""
        if self._visdom is not None:
            self._render(whole=True)
            if self._visdom is not None:
                print(f"Dashboard: {self.history.records} steps in visdom env {self.env!r}: {self.url}")
                return
        self._inline.show(self.panels)

    # ---------------------------------------------------------------- teardown
    def _register_after_cell(self) -> None:
        if in_jupyter():
            from IPython import get_ipython

            get_ipython().events.register("post_run_cell", self._after_cell)
            self._callback_registered = True

    def _after_cell(self, result: Any = None) -> None:
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - never break the notebook after a cell
            self._warn_once("flush", f"Dashboard: could not redraw ({exc!r})")

    def remove(self) -> None:
        """Remove every hook this dashboard registered (what is recorded stays)."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self.watched.clear()
        self._pending = {}
        self._raw = {}

    def close(self) -> None:
        """:meth:`remove`, draw what is pending (every visdom window whole), and stop
        redrawing after each cell."""
        self.remove()
        self.flush(whole=True)
        if self.tensorboard is not None:
            self.tensorboard.close()
        if self._callback_registered:
            from IPython import get_ipython

            try:
                get_ipython().events.unregister("post_run_cell", self._after_cell)
            except ValueError:
                pass
            self._callback_registered = False

    def __enter__(self) -> "Dashboard":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Dashboard(mode={self.mode!r}, env={self.env!r}, layers={len(self.watched)}, "
                f"steps={self.history.records})")
