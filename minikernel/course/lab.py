"""``python -m minikernel lab``: start JupyterLab on the course.

The server runs from this environment's interpreter (``sys.executable -m
jupyterlab``), serves the course folder (so both your notebooks, ``my-notebooks/``,
and the files you write, ``minikernel/``, are in the file browser), listens on
127.0.0.1 only, keeps token authentication on, and prints one block: the URL to
open, token included (it opens your copy of chapter 01), where to start, and the
dashboards' pages. Ctrl-C stops it cleanly (running kernels are shut down).

Your notebooks are copies of ``chapters/`` made on the first start
(``lab_notebooks``): saving them changes no file of the course, so ``make update``
(``git pull``) never conflicts with your work. The server's routine log is left out
(JupyterLab logs warnings and errors only; kernels use Unix sockets rather than TCP,
which each kernel would warn about; tornado's note about Jupyter's ping settings is
dropped).

Beside it runs the visdom server of the live dashboards
(``minikernel/course/dashboard_server.py``) on 127.0.0.1:8097, stopped on exit too. A
visdom server already answering there is reused (and left running); if the port
is taken by something else the next free one is used, and the kernels learn it
from ``MINIKERNEL_VISDOM_URL``. The launcher prints the page of each chapter's
dashboard environment (``http://127.0.0.1:8097/env/ch04``). ``--no-dashboard`` leaves visdom out (the
dashboards then draw inline); ``--dashboard-port N`` starts it on port N instead
(``make lab ARGS="--dashboard-port 8100"``).

The lab is set up for reading the chapters: JupyterLab's settings come from
``minikernel/course/lab_settings/overrides.json`` (no "Jupyter news" prompt, no
update check), and the file browser hides the course's ``chapters/`` (their
notebooks and jupytext sources): your copies are what to open.

Any argument this command does not know is passed on to ``jupyter lab``
unchanged, for example ``--ServerApp.base_url=/course/`` or a notebook to open.

Standard library only, so it also runs as a plain script: ``python minikernel/course/lab.py``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

try:
    from . import dashboard_server, lab_notebooks, ports
except ImportError:  # run as a plain script: python minikernel/course/lab.py
    import dashboard_server  # type: ignore[no-redef]
    import lab_notebooks  # type: ignore[no-redef]
    import ports  # type: ignore[no-redef]


ROOT = Path(__file__).resolve().parents[2]  # the course folder: the lab's root
CHAPTERS = ROOT / "chapters"
FIRST_NOTEBOOK = f"{lab_notebooks.FOLDER}/01_strides.ipynb"  # where the lab opens (your copy), relative to ROOT
LAB_SETTINGS = Path(__file__).resolve().parent / "lab_settings"  # overrides.json: JupyterLab's defaults for the course
#: Not listed in the file browser: the course's own chapters (you open your copies in
#: my-notebooks/) and their jupytext sources, besides jupyter_server's own defaults.
HIDDEN = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "[0-9][0-9]_*.py", "chapters"]
#: Server messages a learner can do nothing about (module doc): JupyterLab's INFO log,
#: and tornado's note that Jupyter's websocket ping settings differ from its own.
QUIET_LOGGING = {"loggers": {"tornado.general": {"level": "ERROR"}}}
HOST = "127.0.0.1"
DEFAULT_PORT = 8888
PORT_SEARCH = 100  # try 8888, 8889, ... up to this many ports
READY_TIMEOUT_S = 120.0
STOP_GRACE_S = 20.0  # after Ctrl-C, how long the server may take to shut kernels down

_TOKEN_SETTINGS = ("IdentityProvider.token", "ServerApp.token", "NotebookApp.token")
_PORT_SETTINGS = ("ServerApp.port", "port")
_IP_SETTINGS = ("ServerApp.ip", "ip")
_BASE_URL_SETTINGS = ("ServerApp.base_url", "base-url", "base_url")


def say(message: str) -> None:
    """Print one status line of this launcher (JupyterLab's own log goes to stderr)."""
    print(f"[lab] {message}", flush=True)


def passthrough_setting(args: list[str], names: tuple[str, ...]) -> str | None:
    """The last value given to any of ``names`` in jupyter-style args, else None.

    Accepts ``--name=value`` and ``--name value``, as ``jupyter lab`` does.
    """
    value = None
    for i, arg in enumerate(args):
        for name in names:
            flag = "--" + name
            if arg.startswith(flag + "="):
                value = arg[len(flag) + 1:]
            elif arg == flag and i + 1 < len(args):
                value = args[i + 1]
    if value is not None and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]  # traitlets accepts quoted strings: --IdentityProvider.token=''
    return value


def _http_status(url: str, token: str | None = None, timeout: float = 2.0) -> int | None:
    """HTTP status of a GET (ignoring any proxy settings), or None if nothing answers."""
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"token {token}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except (OSError, ValueError):
        return None


def _child_setup():
    """Runs in the server process before exec: default SIGINT handling, and (Linux)
    a SIGTERM if this launcher dies, so that no server is left behind."""
    prctl = None
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            prctl = None

    def setup() -> None:
        # A launcher started in the background by a shell inherits SIGINT ignored;
        # the server and its kernels (interrupts!) need the default back.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if prctl is not None:
            prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG

    return setup


def ready_block(url: str, dashboard_lines: list[str], token_ok: bool = True, token: bool = True) -> str:
    """What the launcher prints once JupyterLab answers: where to go, and nothing else."""
    if not token:
        opening = "Open (NO authentication, as you asked):"
    elif token_ok:
        opening = "Open this URL (it holds the access token):"
    else:
        opening = ("Open this URL (the server did not take the token: a Jupyter config file may set "
                   "another; use that one if the page asks):")
    lines = ["", "=" * 72, "  minikernel is ready. " + opening, f"    {url}",
             f"  Start with {FIRST_NOTEBOOK}: your copy of chapter 01 (chapters/ stays the course's).",
             "  You write the exercises in minikernel/: each box links to its function; save the",
             "  file and run the cell again.",
             f"  Live dashboards: {dashboard_lines[0]}",
             *(f"    {line}" for line in dashboard_lines[1:]),
             "  Ctrl-C stops everything. Course updates later: make update.", "=" * 72, ""]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The launcher's own options; everything else goes to ``jupyter lab``."""
    parser = argparse.ArgumentParser(
        prog="python -m minikernel lab",
        description="Start JupyterLab on the course, opening chapter 01 (127.0.0.1, token authentication). "
        "Unknown arguments are passed to `jupyter lab`.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--port",
        type=ports.tcp_port,
        default=None,
        help=f"port to listen on (default: {DEFAULT_PORT}, or the next free one)",
    )
    parser.add_argument(
        "--dashboard-port",
        type=ports.tcp_port,
        default=dashboard_server.DEFAULT_PORT,
        metavar="N",
        help=f"port of the visdom server for the live dashboards (default: {dashboard_server.DEFAULT_PORT}, "
        "or the next free one)",
    )
    parser.add_argument(
        "--no-dashboard",
        action="store_true",
        help="do not start the visdom server for the live dashboards beside JupyterLab",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run JupyterLab until Ctrl-C (or SIGTERM); return the exit status."""
    args, extra = build_parser().parse_known_args(sys.argv[1:] if argv is None else argv)

    if not CHAPTERS.is_dir():
        say(f"no chapters/ directory at {CHAPTERS}; run this from the course checkout")
        return 2

    ip = passthrough_setting(extra, _IP_SETTINGS) or HOST
    host = HOST if ip in ("0.0.0.0", "::", "*", "") else ip
    if host not in (HOST, "localhost", "::1"):
        say(f"note: listening on {ip}, not just this machine, because of your arguments")

    port_arg = passthrough_setting(extra, _PORT_SETTINGS)
    try:
        if args.port is not None:
            port = args.port
            if not ports.port_is_free(port, HOST):
                say(f"port {port} is in use; pick another with --port, or leave --port out")
                return 2
        elif port_arg is not None:
            port = int(port_arg)
        else:
            port = ports.find_free_port(DEFAULT_PORT, PORT_SEARCH, HOST)
    except (OSError, ValueError) as err:
        say(f"cannot choose a port: {err}")
        return 2

    base_url = passthrough_setting(extra, _BASE_URL_SETTINGS) or "/"
    base_url = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"

    user_token = passthrough_setting(extra, _TOKEN_SETTINGS)
    if user_token is None:
        # Passed through the environment rather than argv, so that other users
        # cannot read it in `ps`. An existing JUPYTER_TOKEN is kept.
        token = os.environ.get("JUPYTER_TOKEN") or secrets.token_hex(24)
    else:
        token = user_token
    env = dict(os.environ, JUPYTER_TOKEN=token) if token else dict(os.environ)
    for line in lab_notebooks.sync(ROOT):  # your copies of the chapters (module doc)
        say(line)
    dashboard = None  # the visdom server this launcher started (None: none, or not ours)
    dashboard_lines = ["off (--no-dashboard): dashboards draw inline"]
    if args.no_dashboard:
        pass
    elif env.get(dashboard_server.URL_VARIABLE):
        dashboard_lines = [f"{env[dashboard_server.URL_VARIABLE]} (from {dashboard_server.URL_VARIABLE})"]
    else:
        visdom_url, dashboard, message = dashboard_server.start_beside_lab(
            args.dashboard_port, preexec_fn=_child_setup())
        dashboard_lines = [message]
        if visdom_url:
            env[dashboard_server.URL_VARIABLE] = visdom_url  # the kernels' Dashboard reads it
            dashboard_lines = [visdom_url] + [line.strip() for line in
                                              dashboard_server.env_lines(visdom_url, CHAPTERS)[1:]]

    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={ROOT}",
        f"--ServerApp.default_url=/lab/tree/{FIRST_NOTEBOOK}",
        f"--ServerApp.ip={HOST}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",  # fail rather than silently move to another port
        "--no-browser",
        f"--LabApp.app_settings_dir={LAB_SETTINGS}",
        "--ContentsManager.hide_globs=" + repr(HIDDEN),
        "--ServerApp.log_level=WARN",  # its start-up INFO lines: the block below says what matters
        "--LabApp.log_level=WARN",
        f"--ServerApp.logging_config={QUIET_LOGGING!r}",
    ]
    if os.name == "posix":
        # Kernels talk to the server over Unix sockets in Jupyter's runtime folder (only
        # this user can open them), not over TCP, which each kernel warns about.
        cmd.append("--KernelManager.transport=ipc")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    cmd += extra  # last, so the user's settings win

    say("starting JupyterLab ...")
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            # Its own session, so that a Ctrl-C in the terminal reaches only this
            # launcher, which stops the server with SIGTERM: no "Shutdown this Jupyter
            # server (y/[n])?" prompt, kernels are shut down. No terminal on stdin either.
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_child_setup(),
        )
    except OSError as err:
        say(f"could not start JupyterLab ({err}); is it installed? Try: make setup")
        if dashboard is not None:
            dashboard_server.stop_server(dashboard)
        return 1

    signals_seen = 0
    killed = False

    def forward(_signum: int, _frame: object) -> None:
        # First Ctrl-C/SIGTERM/SIGHUP: SIGTERM, which makes the server shut its
        # kernels down and exit. A second one: SIGKILL.
        nonlocal signals_seen, killed
        signals_seen += 1
        if proc.poll() is not None:
            return
        if signals_seen == 1:
            proc.terminate()
        else:
            say("killing JupyterLab")
            proc.kill()
            killed = True

    handled = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {sig: signal.signal(sig, forward) for sig in handled}
    try:
        base = f"http://{host if ':' not in host else '[' + host + ']'}:{port}{base_url}"
        deadline = time.monotonic() + READY_TIMEOUT_S
        ready = False
        while not signals_seen and proc.poll() is None and time.monotonic() < deadline:
            if _http_status(base + "api", timeout=1.0) is not None:  # any HTTP answer
                ready = True
                break
            time.sleep(0.25)

        if ready and not signals_seen:
            status = _http_status(base + "api/status", token=token) if token else 200
            url = f"{base}lab/tree/{FIRST_NOTEBOOK}" + (f"?token={token}" if token else "")
            print(ready_block(url, dashboard_lines, token_ok=status == 200, token=bool(token)), flush=True)
        elif proc.poll() is None and not signals_seen:
            say(f"the server has not answered after {READY_TIMEOUT_S:.0f} s; its log is above")

        stop_started = None
        while True:
            try:
                code = proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            if signals_seen and stop_started is None:
                stop_started = time.monotonic()
                say("stopping JupyterLab (shutting down kernels) ...")
            if stop_started is not None and time.monotonic() - stop_started > STOP_GRACE_S:
                say("JupyterLab did not stop in time; killing it")
                proc.kill()
                killed = True
                stop_started = float("inf")  # kill once, then wait
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if dashboard is not None:
            dashboard_server.stop_server(dashboard)
            say("stopped the visdom dashboard server")

    if signals_seen:
        say("stopped" if not killed else "killed")
        return 0 if not killed else 1
    say(f"JupyterLab exited with code {code}" + ("" if code == 0 else "; its log is above"))
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    raise SystemExit(main())
