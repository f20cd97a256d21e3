"""Hostile code for the sandbox tests, appended to a solved ``minikernel/strides.py``.

``_hostile(name, tests, payload)`` wraps the exercise function ``name``: while one of
``tests`` (test function names) runs, ``payload()`` runs first; otherwise the solved
function answers. Each payload does one thing a submission must not be able to do.
Placeholders in capitals are filled in by the test.
"""
import os as _os
import re as _re

CHOSEN = {}  # the test picks HOSTILE_A or HOSTILE_B


def _hostile(name, tests, payload):
    original = globals()[name]

    def wrapper(*args, **kwargs):
        current = _re.search(r"::(\w+)", _os.environ.get("PYTEST_CURRENT_TEST", ""))
        if current and current.group(1) in tests:
            payload()
        return original(*args, **kwargs)

    wrapper.__name__ = name
    globals()[name] = wrapper


def _read_the_references():
    namespace = {}
    exec(open("TEACHER_SOLUTIONS").read(), namespace)  # the teacher's checkout, by absolute path


def _write_outside():
    import sysconfig

    errors = []
    for target in (_os.path.join(sysconfig.get_paths()["purelib"], "CANARY_NAME"), "OUTSIDE_CANARY", __file__):
        try:
            with open(target, "a") as f:
                f.write("written by a submission\n")
        except OSError as err:
            errors.append(err)
    if errors:
        raise errors[0]


def _fork_bomb():
    import time

    me = _os.getpid()
    try:
        while True:
            _os.fork()
    except OSError:
        if _os.getpid() != me:  # the bomb's processes keep their places
            time.sleep(60)
            _os._exit(0)
        raise


def _fill_the_disk():
    import tempfile

    folder = tempfile.mkdtemp()
    chunk = b"x" * (8 << 20)
    for i in range(10_000):
        with open(_os.path.join(folder, f"fill{i}"), "wb") as f:
            for _ in range(4):
                f.write(chunk)


def _allocate_50_gb():
    return bytearray(50 << 30)


_DAEMON_STARTED = []


def _daemon():
    if _DAEMON_STARTED:
        return
    _DAEMON_STARTED.append(True)
    if _os.fork() == 0:
        _os.setsid()
        if _os.fork() == 0:
            import ctypes
            import time

            ctypes.CDLL(None).prctl(15, b"DAEMON_NAME", 0, 0, 0)  # PR_SET_NAME: found by the test
            while True:
                time.sleep(0.2)
        _os._exit(0)
    _os.wait()


def _busy_signal_handler():
    import signal

    def busy(*_):
        while True:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1):
        signal.signal(sig, busy)
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    while True:
        pass


HOSTILE_A = {"to_index": ("test_to_index", _read_the_references),
             "broadcast_shape": ("test_broadcast_shape", _write_outside),
             "infer_size": ("test_infer_size", _fork_bomb),
             "permute_strides": ("test_permute_strides", _fill_the_disk),
             "contiguous": ("test_contiguous", _allocate_50_gb)}
HOSTILE_B = {"contiguous_strides": ("test_contiguous_strides", _daemon),
             "index_to_position": ("test_index_to_position", _busy_signal_handler)}
for _name, (_test, _payload) in CHOSEN.items():
    _hostile(_name, {_test}, _payload)
