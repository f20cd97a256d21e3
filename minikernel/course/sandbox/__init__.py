"""The sandbox ``gradebook`` grades each submission in, and what it cannot isolate here.

``plan(limits, hide)`` returns a ``Sandbox``: ``wrap(command, tree)`` runs the
per-submission grading command inside it; ``not_isolated`` says, in words, what is
left open on this machine (the gradebook prints it). The strongest available is used:

* **bubblewrap** (``bwrap``, Debian's ``bubblewrap``; needs root or unprivileged user
  namespaces): a mount namespace where the whole file system is read-only; the
  course's checkout (with ``solutions/``), the submissions, the gradebook's output,
  ``/home``, ``/root`` and the home folder are empty (only the Python installation is
  shown again); ``/tmp`` is a private tmpfs of ``disk_mb`` that holds the grading tree
  (read-only, at ``/tmp/grading/tree``); it, a private ``/dev/shm`` of the same size and
  the grader's own tmpfs (``RUNNER``) are the only places the grading can write;
  a PID namespace (nothing started inside outlives it); a network namespace with
  loopback only. Run as root, the grading itself runs as ``nobody``.
* everywhere: ``launcher.py``, around the grader, sets the limits on processes,
  open files, file size and address space, and catches processes that leave their
  exercise (double fork + ``setsid``): it kills them when that exercise ends, and the
  exercise fails, naming the limit.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

LAUNCHER = Path(__file__).with_name("launcher.py")
INSIDE = Path("/tmp/grading")  #: where the grading tree and the launcher appear in the sandbox
RUNNER = INSIDE / "run"  #: the grader's own temporary files
RUNNER_MB = 256
NOBODY = 65534
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
#: Processes and threads of one submission: the grader runs an exercise per core, and each
#: process may start a thread per core (numba, torch), so it grows with the cores.
DEFAULT_NPROC = max(512, 3 * _CORES * _CORES + 256)
DEFAULT_NOFILE = 1024
DEFAULT_DISK_MB = 1024
NO_OWN_USERNS = "no user namespace of its own"  #: the launcher's words when it cannot make one
HINT = ("install bubblewrap (`apt-get install bubblewrap`, which `python tools/bootstrap.py --system` does) "
        "and allow user namespaces, or grade as root")


@dataclass
class Limits:
    memory_mb: int  #: address space of one process (RLIMIT_AS)
    file_bytes: int  #: largest file one process may write (RLIMIT_FSIZE)
    nproc: int = DEFAULT_NPROC  #: processes and threads of one submission (RLIMIT_NPROC)
    nofile: int = DEFAULT_NOFILE  #: open files of one process (RLIMIT_NOFILE)
    disk_mb: int = DEFAULT_DISK_MB  #: all the files one submission's grading writes, together

    def words(self, with_processes: bool) -> str:
        parts = [f"address space {self.memory_mb} MB per process (--memory-mb)",
                 f"files of at most {self.file_bytes >> 20} MB", f"{self.nofile} open files per process"]
        if with_processes:
            parts.insert(1, f"{self.nproc} processes and threads (--max-processes)")
        return ", ".join(parts)


@dataclass
class Sandbox:
    kind: str  #: "bubblewrap" or "none"
    limits: Limits
    isolated: list[str] = field(default_factory=list)
    not_isolated: list[str] = field(default_factory=list)
    bwrap: str = ""
    hide: list[Path] = field(default_factory=list)
    network: list[str] = field(default_factory=list)  #: the unshare prefix when there is no bubblewrap

    def describe(self) -> str:
        return f"grading sandbox: {self.kind}: " + "; ".join(self.isolated)

    def warnings(self) -> list[str]:
        return [f"not isolated: {what}" for what in self.not_isolated]

    def explain(self, detail: str) -> str:
        """A FAIL's ``detail`` with the limit it ran into named, where it shows one."""
        limits, said = self.limits, []
        for signs, text in (
                (("No space left on device", "Disk quota exceeded"),
                 f"the grading may write {limits.disk_mb} MB in all, in its private /tmp (--disk-mb)"),
                (("Read-only file system",),
                 "the grading sandbox lets an exercise write only in its private /tmp, not in the course"),
                (("Permission denied",) * (self.kind == "bubblewrap"),
                 "the grading runs as an unprivileged user that may write only in its private /tmp"),
                (("MemoryError", "Cannot allocate memory", "can't allocate memory", "Unable to allocate"),
                 f"the address space of a process is limited to {limits.memory_mb} MB (--memory-mb)"),
                (("Resource temporarily unavailable", "can't start new thread"),
                 f"one submission may run at most {limits.nproc} processes and threads (--max-processes)"),
                (("Too many open files",), f"a process may hold at most {limits.nofile} open files (--open-files)"),
                (("File too large",), f"a file may hold at most {limits.file_bytes >> 20} MB"),
                (tuple(str(p) for p in self.hide if self.kind == "bubblewrap"),
                 "the grading sandbox hides the course's checkout (solutions/ included), the submissions, "
                 "the gradebook's output and home folders")):
            if any(sign in detail for sign in signs) and text not in detail:
                said.append(text)
        return detail + "".join(f"\nlimit: {text}" for text in said)

    def tree_path(self, tree: Path) -> Path:
        """Where ``tree`` is seen by the grading."""
        return INSIDE / "tree" if self.kind == "bubblewrap" else tree

    def env(self, tree: Path) -> dict[str, str]:
        if self.kind != "bubblewrap":  # a temporary folder of its own, beside the tree, removed with it
            (tree.parent / "tmp").mkdir(exist_ok=True)
            return {"TMPDIR": str(tree.parent / "tmp")}
        # The grader's own files (its results, logs, numba's cache) on a tmpfs of their own, so
        # that a submission filling its /tmp cannot stop them being written; the processes it
        # forks (pytest, the exercises) use /tmp (the tree's sitecustomize, MINIKERNEL_SCRATCH).
        return {"TMPDIR": str(RUNNER), "MINIKERNEL_SCRATCH": "/tmp", "HOME": "/tmp/home", "XDG_CACHE_HOME": "/tmp/cache",
                "NUMBA_CACHE_DIR": str(RUNNER / "numba"), "MPLCONFIGDIR": "/tmp/matplotlib"}

    def wrap(self, command: list[str], tree: Path) -> list[str]:
        """``command`` (run in ``tree``) inside the sandbox, under the launcher."""
        limits = self.limits
        root = os.geteuid() == 0
        launcher = str(INSIDE / "launcher.py") if self.kind == "bubblewrap" else str(LAUNCHER)
        run = [sys.executable, "-I", launcher, "--nofile", str(limits.nofile), "--fsize", str(limits.file_bytes),
               "--address-space", str(limits.memory_mb << 20)]
        if self.kind != "bubblewrap":
            return [*self.network, *run, "--", *command]
        if root:  # limits first, as root; then nobody: the process limit binds, the files are read-only
            run += ["--nproc", str(limits.nproc), "--user", str(NOBODY)]
        else:  # a user namespace of its own: the process limit counts only the processes in it
            run += ["--nproc", str(limits.nproc)]
        return [*_bwrap_args(self.bwrap, tree, self.hide, limits, root), *run, "--", *command]


def _mount_point(path: Path, under: Path) -> list[str]:
    """bubblewrap arguments making the folders from ``under`` to ``path`` (excluded) traversable."""
    args = []
    for parent in reversed(path.parents):
        if under in parent.parents:
            args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _hidden(paths: list[Path]) -> list[Path]:
    found = []
    for path in [*paths, Path.home(), Path("/home"), Path("/root"), Path("/var/tmp"), Path("/run/user")]:
        path = path.resolve()
        if path.is_dir() and path not in (Path("/"), Path("/tmp")) and path not in found:
            found.append(path)
    return found


def _needed() -> list[Path]:
    """What the grader needs even where it lies in a hidden folder: Python and its environment."""
    paths = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, Path(sys.executable).resolve().parent)}
    return sorted(p for p in paths if p.exists() and not any(q in p.parents for q in paths))


def _bwrap_args(bwrap: str, tree: Path, hide: list[Path], limits: Limits, root: bool) -> list[str]:
    disk, tmp = str(limits.disk_mb << 20), Path("/tmp")
    # /tmp first: what is shown again below may lie in it (a checkout cloned into /tmp, its venv).
    args = [bwrap, "--ro-bind", "/", "/", "--perms", "1777", "--size", disk, "--tmpfs", str(tmp)]
    hidden = [h for h in _hidden(hide) if tmp not in h.parents]
    for path in hidden:
        args += ["--perms", "0755", "--tmpfs", str(path)]
    for path in _needed():
        under = [h for h in [*hidden, tmp] if h == path or h in path.parents]
        if under:
            args += [*_mount_point(path, under[0]), "--ro-bind", str(path), str(path)]
    args += ["--perms", "0755", "--dir", str(INSIDE),
             "--perms", "1777", "--size", str(RUNNER_MB << 20), "--tmpfs", str(RUNNER),
             "--ro-bind", str(tree), str(INSIDE / "tree"), "--ro-bind", str(LAUNCHER), str(INSIDE / "launcher.py"),
             "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", disk, "--tmpfs", "/dev/shm",
             "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
             "--new-session", "--chdir", str(INSIDE / "tree")]
    if root:
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return args


def _bwrap_fails(bwrap: str, limits: Limits) -> str:
    """"" when bubblewrap can set the sandbox up here, else its error."""
    probe = Sandbox("bubblewrap", limits, bwrap=bwrap)
    command = probe.wrap([sys.executable, "-I", "-c", "pass"], LAUNCHER.parent)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        return str(err)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return NO_OWN_USERNS if NO_OWN_USERNS in proc.stderr else ""


def _unshare_network() -> list[str]:
    """A prefix giving the command loopback only (``unshare``), or [] when it cannot be made."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if not unshare or not ip:
        return []
    for flags in (["-n"], ["-rn"]) if os.geteuid() == 0 else (["-rn"],):
        prefix = [unshare, *flags, "sh", "-c", f'"{ip}" link set lo up && exec "$@"', "sh"]
        if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return []


def plan(limits: Limits, hide: list[Path], enabled: bool = True) -> Sandbox:
    """The strongest sandbox this machine allows; ``hide``: folders the grading must not see."""
    bwrap = shutil.which("bwrap") if enabled else None
    why = "switched off (--no-sandbox)" if not enabled else f"bubblewrap is not installed: {HINT}"
    if bwrap:
        failure = _bwrap_fails(bwrap, limits)
        if failure in ("", NO_OWN_USERNS):
            box = Sandbox("bubblewrap", limits, bwrap=bwrap, hide=hide, isolated=[
                "file system read-only, the course's checkout, submissions, output and home folders hidden",
                f"writes only to a private /tmp of {limits.disk_mb} MB (--disk-mb)",
                "PID namespace (every process dies with the grading; one left by an exercise fails it)",
                "network: loopback only", limits.words(with_processes=True)])
            if failure:
                box.not_isolated.append(f"processes: {NO_OWN_USERNS} (the limit counts every process of user "
                                        f"{NOBODY} on this machine, so submissions graded at once share it)")
            return box
        why = f"bubblewrap cannot set up its sandbox here ({failure}): {HINT}"
    network = _unshare_network()
    sandbox = Sandbox("none", limits, network=network, not_isolated=[
        f"file system ({why}): the grading can read every file this user can (the course's checkout with "
        "solutions/, other submissions, the home folder) and write wherever this user can",
        f"disk use: only each file is limited ({limits.file_bytes >> 20} MB), not their number",
        "processes: their number is not limited (a fork bomb is stopped only by the exercise's time limit)",
        "process containment: a process that leaves its exercise's session is killed when its exercise ends, "
        "but one that kills the grading's launcher first survives it"])
    if not network:
        sandbox.not_isolated.append("network: the unshare and ip commands cannot create a network namespace here")
    sandbox.isolated = ["network: loopback only"] * bool(network) + [limits.words(with_processes=False)]
    return sandbox
