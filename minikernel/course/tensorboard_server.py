"""``python -m minikernel tensorboard``: TensorBoard on the dashboards' event files.

A :class:`widgets.Dashboard` created with ``tensorboard=True`` (or a directory)
also writes its panels with ``torch.utils.tensorboard.SummaryWriter``: one
directory per chapter environment and run, ``runs/ch04/torch``,
``runs/ch04/minikernel``, ... under the log directory. This command serves that
directory with TensorBoard on 127.0.0.1 only (TensorBoard has no authentication),
port 6006 unless ``--port`` says otherwise. TensorBoard's page is bundled in its
wheel, so nothing is downloaded.

The log directory is ``$MINIKERNEL_TENSORBOARD_DIR`` if set, else ``runs/`` at
the top of the repository (ignored by git); ``--logdir`` overrides it. The same
thing by hand: ``tensorboard --logdir runs --host 127.0.0.1``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tensorboard import program

from .ports import port_is_free, tcp_port

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
DEFAULT_PORT = 6006
LOGDIR_VARIABLE = "MINIKERNEL_TENSORBOARD_DIR"  # read by widgets.Dashboard(tensorboard=True)


def default_logdir() -> Path:
    """``$MINIKERNEL_TENSORBOARD_DIR``, else ``<repository>/runs``."""
    return Path(os.environ.get(LOGDIR_VARIABLE) or ROOT / "runs")


def say(message: str) -> None:
    print(f"[tensorboard] {message}", flush=True)


def serve(logdir: Path, port: int) -> int:
    """Serve ``logdir`` on 127.0.0.1:``port`` until Ctrl-C; the exit status."""
    if not port_is_free(port, HOST):
        say(f"port {port} is in use; choose another with --port")
        return 2
    logdir.mkdir(parents=True, exist_ok=True)
    board = program.TensorBoard()
    # load_fast=false: the pure-Python reader (the Rust data server is optional);
    # reload_interval: pick up a training run's new points every 2 s.
    board.configure(argv=[None, "--logdir", str(logdir), "--host", HOST, "--port", str(port),
                          "--load_fast", "false", "--reload_interval", "2"])
    say(f"serving {logdir} at http://{HOST}:{port}/ ; Ctrl-C stops it")
    try:
        return board.main() or 0
    except KeyboardInterrupt:
        say("stopped")
        return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m minikernel tensorboard",
        description="Serve the dashboards' TensorBoard event files on 127.0.0.1 (offline).")
    parser.add_argument("--logdir", type=Path, default=None,
                        help=f"event-file directory (default: ${LOGDIR_VARIABLE} or {ROOT / 'runs'})")
    parser.add_argument("--port", type=tcp_port, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return serve(args.logdir or default_logdir(), args.port)


if __name__ == "__main__":
    raise SystemExit(main())
