"""``python -m minikernel <command>``: grade, bench, lab, dashboard, tensorboard, notebooks, site."""
from __future__ import annotations

import sys

USAGE = """usage: python -m minikernel <command> [args]

commands:
  grade [IDs|globs] [--json] [--timeout S] [-j N]
                               run the exercise tests, one row per exercise; each
                               exercise in its own process, at most S seconds
                               (default 60), N exercises at once (default: cores)
  bench [--json] [--quick] [-k TEXT] [--allreduce]
                               time the kernels (or the allreduces) against PyTorch
  lab [jupyter args]           start JupyterLab on 127.0.0.1 serving chapters/
                               (and the visdom dashboard server beside it)
  dashboard [--port N]         start the visdom server for the live dashboards
                               on 127.0.0.1:8097
  tensorboard [--logdir DIR] [--port N]
                               serve the dashboards' TensorBoard event files
                               (default runs/) on 127.0.0.1:6006
  notebooks [NN ...]           re-execute chapters/*.py into .ipynb (references on)
  release OUT [--keep IDs]     write a student edition (no references) into OUT
  gradebook SUBMISSIONS --out DIR [-j N] [--weights FILE] [--format gradescope] [--single]
                               grade a class's submissions into a gradebook (or
                               Gradescope's results.json; --single: one submission)
  site [--port N] [--build] [--force]
                               build the course website (build/site/) when out of
                               date and serve it on 127.0.0.1:8000 (--build: no serving)
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "grade":
        from .course.grading import main as run
    elif command == "bench":
        from .course.bench.cli import main as run
    elif command == "lab":
        from .course.lab import main as run
    elif command == "dashboard":
        from .course.dashboard_server import main as run
    elif command == "tensorboard":
        from .course.tensorboard_server import main as run
    elif command == "notebooks":
        from .course.notebooks import main as run
    elif command == "release":
        from .course.edition import main as run
    elif command == "gradebook":
        from .course.gradebook import main as run
    elif command == "site":
        from .course.site import main as run
    else:
        print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
