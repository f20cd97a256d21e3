"""Draw a :class:`~widgets.dashboard_log.DashboardLog` on a visdom server.

This speaks visdom's HTTP API directly (the same JSON its Python client sends),
with the standard library: every request has a timeout, ignores proxy settings
(the server is on this machine), and a dead server turns into one
:class:`VisdomUnavailable` instead of a hang, a log message or a traceback.

The endpoints used (``visdom/server/handlers/web_handlers.py``):

* ``POST /env/<env>`` ``{"eid"}``: create the environment;
* ``POST /close`` ``{"eid", "win": None}``: close all its windows;
* ``POST /events`` ``{"eid", "win", "data": [plotly traces], "layout", "opts"}``:
  create or replace a window;
* ``POST /update`` ``{"eid", "win", "name": None, "append": true, "layout", "data": [traces]}``:
  append the points of ``data[i]`` to the window's i-th trace (a window closed in
  the page is made again from them);
* ``POST /win_data`` ``{"eid", "win": None}``: every window of the env, as JSON.
"""
from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from minikernel.course.dashboard_server import DEFAULT_PORT, URL_VARIABLE, is_visdom, url_for

from .dashboard_log import Panel

__all__ = ["DEFAULT_URL", "URL_VARIABLE", "VisdomClient", "VisdomRenderer", "VisdomUnavailable", "is_visdom",
           "resolve_server"]

#: Where the dashboards look for visdom unless told otherwise (``make dashboard``).
DEFAULT_URL = url_for(DEFAULT_PORT)


def resolve_server(server: str | None) -> str:
    """``server``, else ``$MINIKERNEL_VISDOM_URL``, else :data:`DEFAULT_URL` (no trailing /)."""
    return (server or os.environ.get(URL_VARIABLE) or DEFAULT_URL).rstrip("/")


class VisdomUnavailable(Exception):
    """The server did not answer (in time), or answered with an error."""


class VisdomClient:
    """POST JSON to one visdom environment.

    Args:
        url (str): the server, e.g. ``"http://127.0.0.1:8097"``.
        env (str): the visdom environment (a tab in its page).
        timeout (float, optional): seconds for each request. Default: ``2.0``.
    """

    def __init__(self, url: str, env: str, timeout: float = 2.0):
        if not env or "/" in env:
            raise ValueError(f"env must be a non-empty name without '/', got {env!r}")
        self.url, self.env, self.timeout = url.rstrip("/"), env, timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # local server

    def post(self, endpoint: str, payload: dict[str, Any]) -> str:
        """POST ``payload`` as JSON; the answer's text. Raises VisdomUnavailable."""
        # allow_nan=False: the browser's JSON.parse rejects NaN/Infinity, so a
        # non-finite value must never reach the server (the panels drop them).
        body = json.dumps(payload, allow_nan=False).encode()
        request = urllib.request.Request(f"{self.url}/{endpoint}", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return response.read().decode(errors="replace")
        except (OSError, urllib.error.URLError) as exc:
            raise VisdomUnavailable(f"{self.url}/{endpoint}: {exc}") from None

    def reset_env(self) -> None:
        """Create the environment if needed and close all its windows."""
        self.post(f"env/{urllib.parse.quote(self.env)}", {"eid": self.env})
        self.post("close", {"eid": self.env, "win": None})

    def windows(self) -> dict[str, Any]:
        """Every window of the environment: ``{win id: visdom's window JSON}``."""
        return json.loads(self.post("win_data", {"eid": self.env, "win": None}) or "{}")


def _trace(name: str, xs: list[float], ys: list[float], kind: str) -> dict[str, Any]:
    trace = {"x": xs, "y": ys, "name": name, "type": "scatter", "mode": "lines"}
    if kind == "histogram":
        trace["line"] = {"shape": "hv"}  # a step line: each bin's value across its width
    return trace


def _layout(panel: Panel) -> dict[str, Any]:
    return {"title": {"text": panel.title}, "showlegend": len(panel.traces) > 1,
            "xaxis": {"title": {"text": panel.xlabel}},
            "yaxis": {"title": {"text": panel.ylabel}, "type": "log" if panel.log_y else "linear"},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 40}}


class VisdomRenderer:
    """Keeps the windows of one env in step with the panels of a dashboard's log.

    The first time a panel is drawn its window is created with all its points;
    after that one ``/update`` per window appends the new points of all its lines
    (in the order the window was created with), so the browser receives small
    patches. A window whose set of lines changed, and the histograms, are sent
    whole again.

    Every window is also sent whole again at least every ``resync_seconds``
    while points arrive, and by :meth:`sync` (a dashboard's ``close()`` and
    ``show()``). Why: visdom's page applies a patch to the copy of a window it is
    drawing, and a patch that meets a window still waiting in the page's 100 ms
    batch (a busy machine, a page that reloaded its env meanwhile) leaves the
    drawn line short of points while the server holds them all; nothing later
    repairs it. A whole window replaces whatever the page shows.

    Args:
        client (VisdomClient): the server and env to draw in.
        resync_seconds (float, optional): the longest time between two whole
            sends of every window while :meth:`render` is called. Default: ``2.0``.
    """

    def __init__(self, client: VisdomClient, resync_seconds: float = 2.0):
        if not resync_seconds > 0:
            raise ValueError(f"resync_seconds must be positive, got {resync_seconds!r}")
        self.client, self.resync_seconds = client, resync_seconds
        self._sent: dict[tuple[str, str], int] = {}  # (window, trace) -> points sent
        self._order: dict[str, list[str]] = {}  # window -> its traces, as created
        self._synced = -math.inf  # time.monotonic() of the last whole send

    def sync(self, panels: list[Panel]) -> None:
        """Send every window whole. Raises VisdomUnavailable if the server stops answering."""
        for panel in panels:
            if panel.traces:  # visdom cannot make a window without a trace
                self._create(panel)
        self._synced = time.monotonic()

    def render(self, panels: list[Panel]) -> None:
        """Send what changed. Raises VisdomUnavailable if the server stops answering."""
        if time.monotonic() - self._synced >= self.resync_seconds:
            self.sync(panels)
            return
        for panel in panels:
            if not panel.traces:  # visdom cannot make a window without a trace
                continue
            if panel.kind == "histogram" or self._order.get(panel.id) != list(panel.traces):
                self._create(panel)
                continue
            new = {name: (xs[self._sent[(panel.id, name)]:], ys[self._sent[(panel.id, name)]:])
                   for name, (xs, ys) in panel.traces.items()}
            if any(xs for xs, _ys in new.values()):
                # name None: the server appends data[i] to the window's i-th trace.
                # The layout rides along: if the window was closed in the page
                # meanwhile, visdom makes a new one from this request, and without a
                # layout its stock server answers HTTP 500 (KeyError 'layout').
                self.client.post("update", {
                    "eid": self.client.env, "win": panel.id, "name": None, "append": True,
                    "layout": _layout(panel),
                    "data": [_trace(name, xs, ys, panel.kind) for name, (xs, ys) in new.items()]})
                for name, (xs, _ys) in panel.traces.items():
                    self._sent[(panel.id, name)] = len(xs)

    def _create(self, panel: Panel) -> None:
        self.client.post("events", {
            "eid": self.client.env, "win": panel.id, "layout": _layout(panel),
            "opts": {"title": panel.title},
            "data": [_trace(name, xs, ys, panel.kind) for name, (xs, ys) in panel.traces.items()]})
        self._order[panel.id] = list(panel.traces)
        for name, (xs, _ys) in panel.traces.items():
            self._sent[(panel.id, name)] = len(xs)
