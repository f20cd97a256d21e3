"""``python -m minikernel dashboard``: the visdom server behind the live dashboards.

It serves visdom on 127.0.0.1 only (visdom has no authentication: whoever reaches
the port can read and change every plot), on port 8097 unless ``--port`` says
otherwise, from the front-end files ``make setup`` installed from the npm registry
(``tools/visdom_assets.json``). It never downloads anything: if a file is
missing it says to run ``make setup`` and exits. If a visdom server already
answers on the port, it says so and leaves it running.

``widgets.dashboard.Dashboard`` looks for the server at ``$MINIKERNEL_VISDOM_URL``
or ``http://127.0.0.1:8097``; ``python -m minikernel lab`` starts this server
beside JupyterLab and sets that variable for its kernels.

Each chapter's dashboard draws in its own visdom environment (``env="ch04"``), and
visdom's root page shows only the empty "main" one; so both commands print the
page of every chapter's environment (``http://127.0.0.1:8097/env/ch04``), read
from the chapters' ``Dashboard(..., env="…")`` calls.

Standard library only (plus visdom, imported when serving).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

try:
    from .ports import find_free_port, port_is_free, tcp_port
except ImportError:  # imported by lab.py run as a plain script
    from ports import find_free_port, port_is_free, tcp_port  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tools" / "visdom_assets.json"
CHAPTERS = ROOT / "chapters"
#: ``Dashboard(..., env="ch04", ...)`` in a chapter's jupytext source: the env it draws in.
_ENV_RE = re.compile(r"\bDashboard\([^)]*?\benv\s*=\s*[\"']([^\"']+)[\"']")
HOST = "127.0.0.1"
DEFAULT_PORT = 8097
PORT_SEARCH = 100
URL_VARIABLE = "MINIKERNEL_VISDOM_URL"  # read by widgets.dashboard.Dashboard
DEFAULT_ENV_PATH = Path.home() / ".visdom"  # visdom's own default: envs saved from its page go there
READY_TIMEOUT_S = 60.0


def say(message: str) -> None:
    print(f"[dashboard] {message}", flush=True)


def url_for(port: int) -> str:
    return f"http://{HOST}:{port}"


def chapter_envs(chapters: Path = CHAPTERS) -> dict[str, list[str]]:
    """``{"04_hooks": ["ch04"], ...}``: the visdom environments each chapter's
    dashboards draw in, from its ``Dashboard(..., env="…")`` calls, in chapter order."""
    found: dict[str, list[str]] = {}
    for source in sorted(chapters.glob("[0-9][0-9]_*.py")):
        envs = list(dict.fromkeys(_ENV_RE.findall(source.read_text(encoding="utf-8"))))
        if envs:
            found[source.stem] = envs
    return found


def env_url(url: str, env: str) -> str:
    """The visdom page of one environment: ``http://127.0.0.1:8097/env/ch04``."""
    return f"{url.rstrip('/')}/env/{urllib.parse.quote(env)}"


def env_lines(url: str, chapters: Path = CHAPTERS) -> list[str]:
    """What to print about where the dashboards are: one line per chapter's environment."""
    lines = [f"chapter {stem[:2]} ({stem[3:]}): {env_url(url, env)}"
             for stem, envs in chapter_envs(chapters).items() for env in envs]
    if not lines:
        return [f"open {url} (no chapter names a dashboard environment)"]
    return ["each chapter's dashboard has its own page (the root page shows visdom's empty 'main'):",
            *(f"  {line}" for line in lines)]


# ------------------------------------------------------------------- the assets


def visdom_static_dir() -> Path | None:
    """``site-packages/visdom/static`` of this interpreter (found without importing visdom)."""
    spec = importlib.util.find_spec("visdom")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "static"


def missing_assets(static: Path | None = None) -> list[str]:
    """What visdom would try to download at start: files of the asset list, or a
    ``version.built`` that does not name the installed visdom. Empty when complete."""
    static = static or visdom_static_dir()
    if static is None:
        return ["visdom itself (not installed)"]
    manifest = json.loads(ASSETS.read_text())
    missing = [dst for package in manifest["packages"] for _src, dst in package["files"]
               if not (static / dst).is_file()]
    version_file = static.parent / "VERSION"
    version = version_file.read_text().strip() if version_file.is_file() else None
    built = static / "version.built"
    if not built.is_file() or built.read_text().strip() != version:
        missing.append("version.built")
    return missing


# ---------------------------------------------------------------- ports and probes


def is_visdom(url: str, timeout: float = 1.0) -> bool:
    """Whether visdom's page answers at ``url`` within about ``timeout`` seconds.

    A TCP connect first (a closed port costs no HTTP round trip), then ``GET /``
    without proxies (the server is local) and visdom's page title.
    """
    parts = urllib.parse.urlsplit(url)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with socket.create_connection((parts.hostname or HOST, parts.port or 80), timeout=timeout):
            pass
        with opener.open(url.rstrip("/") + "/", timeout=timeout) as response:
            return response.status == 200 and b"<title>visdom</title>" in response.read(1 << 16)
    except (OSError, ValueError, urllib.error.URLError):
        return False


# ----------------------------------------------------------------------- serving


class _QuietStyleError(logging.Filter):
    # visdom's page links ../user/style.css through tornado's static_url, which logs
    # an error on every page load although the route exists; nothing is wrong.
    def filter(self, record: logging.LogRecord) -> bool:
        return "Could not open static file" not in record.getMessage()


def patch_window_without_layout() -> None:
    """Let visdom 0.2.4 make a window from an ``/update`` that carries no layout.

    An ``/update`` with ``append`` to a window that is gone (closed with its ×
    in the page while training runs) makes a new window from the request, and
    visdom's ``window()`` reads ``args["layout"]`` unconditionally: any client
    that sends no layout there (visdom's own ``vis.line(update="append")`` does
    not) gets HTTP 500 (KeyError 'layout') and the page stops updating. An empty
    layout is what visdom's client sends for a plot without options.
    """
    from visdom.server.handlers import web_handlers
    from visdom.utils import server_utils

    if getattr(web_handlers.window, "_minikernel_patched", False):
        return
    original = server_utils.window

    def window(args: dict) -> dict:
        if args.get("data") and "layout" not in args:
            args = {**args, "layout": {}}
        return original(args)

    window._minikernel_patched = True  # type: ignore[attr-defined]
    web_handlers.window = window  # the name UpdateHandler calls


def serve(port: int, env_path: Path) -> int:
    """Run visdom on 127.0.0.1:``port`` until Ctrl-C or SIGTERM; the exit status."""
    missing = missing_assets()
    if missing:
        say(f"visdom's front-end files are missing ({', '.join(missing[:4])}"
            f"{', ...' if len(missing) > 4 else ''}): run make setup "
            "(it installs them from the npm registry)")
        return 1
    url = url_for(port)
    if not port_is_free(port):
        if is_visdom(url):
            say(f"a visdom server is already running at {url}; using it")
            return 0
        say(f"port {port} is in use by something else; choose another with --port")
        return 2

    logging.basicConfig(level=logging.WARNING, format="[visdom] %(levelname)s %(message)s")
    logging.getLogger("tornado.general").addFilter(_QuietStyleError())
    import visdom.server.app as visdom_app
    from visdom.server.run_server import start_server

    # visdom turns tornado's debug mode on, which also restarts the server whenever
    # an imported module changes on disk; a dashboard must not restart mid-training.
    visdom_app.tornado_settings["autoreload"] = False
    patch_window_without_layout()

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    # Started in the background by a shell, a process inherits SIGINT ignored;
    # Ctrl-C (or kill -INT) must still stop the server.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env_path.mkdir(parents=True, exist_ok=True)
    try:
        # base_url "" is what visdom's own command line passes for "/" (routes are
        # base_url + "/events", ...); start_server's default "/" would give "//events".
        start_server(port=port, hostname=HOST, base_url="", env_path=str(env_path) + "/", bind_local=True,
                     print_func=lambda _port: _say_serving(url, env_path))
    except KeyboardInterrupt:
        say("stopped")
        return 0
    except OSError as exc:
        say(f"could not listen on {HOST}:{port} ({exc})")
        return 1
    return 0


def _say_serving(url: str, env_path: Path) -> None:
    say(f"visdom is serving the dashboards at {url} (saved envs: {env_path}); Ctrl-C stops it")
    for line in env_lines(url):
        say(line)


# ------------------------------------------------------------ beside JupyterLab


def start_beside_lab(port: int = DEFAULT_PORT, preexec_fn=None) -> tuple[str | None, subprocess.Popen | None, str]:
    """For ``python -m minikernel lab``: ``(url, process, message)``.

    Reuses a visdom server already answering on ``port`` (process None: not ours to
    stop); if the port is taken by something else, uses the next free one. ``url``
    is None when no server could be started (the dashboards then draw inline).
    ``preexec_fn`` runs in the child before visdom starts (the launcher passes
    one that stops the server if the launcher dies).
    """
    missing = missing_assets()
    if missing:
        return None, None, ("visdom's front-end files are missing (run make setup); "
                            "dashboards will draw inline")
    url = url_for(port)
    if is_visdom(url):
        return url, None, f"using the visdom server already running at {url}"
    if not port_is_free(port):
        try:
            port = find_free_port(port + 1, PORT_SEARCH - 1, HOST)
        except OSError:
            return None, None, "no free port for visdom; dashboards will draw inline"
        url = url_for(port)
    process = subprocess.Popen([sys.executable, "-m", "minikernel", "dashboard", "--port", str(port)],
                               cwd=ROOT, stdin=subprocess.DEVNULL, start_new_session=True,
                               stdout=subprocess.DEVNULL,  # the launcher prints where it is; warnings still show
                               preexec_fn=preexec_fn)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        if is_visdom(url, timeout=1.0):
            return url, process, f"visdom is serving the dashboards at {url}"
        time.sleep(0.25)
    stop_server(process)
    return None, None, "the visdom server did not start (its log is above); dashboards will draw inline"


def stop_server(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited after ``grace_s`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m minikernel dashboard",
        description="Serve the live dashboards with visdom on 127.0.0.1 (offline front-end files).")
    parser.add_argument("--port", type=tcp_port, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    parser.add_argument("--env-path", type=Path, default=DEFAULT_ENV_PATH,
                        help=f"where visdom keeps saved environments (default: {DEFAULT_ENV_PATH})")
    parser.add_argument("--check", action="store_true",
                        help="only check that the front-end files are installed")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.check:
        missing = missing_assets()
        say("visdom's front-end files are installed" if not missing
            else f"missing: {', '.join(missing)}; run make setup")
        return 1 if missing else 0
    return serve(args.port, args.env_path)


if __name__ == "__main__":
    raise SystemExit(main())
