"""The course environment is pinned in one place and installed as pinned.

constraints.txt holds the exact pins; environment.yml (conda/mamba) repeats them
in its ``pip:`` section; pyproject.toml names the dependencies; lock-py3.X.txt (one
per supported Python, written by ``make lock``) pins every package with hashes. These
tests check that they agree, that torch is pinned exactly (a range lets pip choose a
build with gigabytes of CUDA wheels), that the supported Pythons are the same
everywhere, and that the running environment holds exactly the locked versions.

The helpers return lists of problems; the tests at the bottom run them on crafted
inputs, so a mismatch is known to be detected.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
import yaml
from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"
ENVIRONMENT = ROOT / "environment.yml"
PYPROJECT = ROOT / "pyproject.toml"
SUPPORTED_PYTHONS = ("3.11", "3.12", "3.13")


def _tool(name: str):
    """A module of tools/ (the set-up scripts, not a package: they import each other by name)."""
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    return importlib.import_module(name)


lockfile = _tool("lockfile")
bootstrap = _tool("bootstrap")

Pins = dict[str, Requirement]  # canonical name -> requirement


# ----------------------------------------------------------------------- parsing


def parse_requirement_lines(lines: Iterable[str], source: str = "<lines>") -> Pins:
    """Requirements in pip's file syntax, keyed by canonical name.

    Blank lines, comments and option lines (``-e .``, ``-r``, ``--index-url``, ...)
    are skipped. A package listed twice is an error: which line wins would be unclear.
    """
    pins: Pins = {}
    for number, raw in enumerate(lines, 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as err:
            raise ValueError(f"{source}:{number}: not a requirement: {line!r} ({err})") from None
        name = canonicalize_name(req.name)
        if name in pins:
            raise ValueError(f"{source}:{number}: {req.name} is listed twice")
        pins[name] = req
    return pins


def read_constraints(path: Path = CONSTRAINTS) -> Pins:
    return parse_requirement_lines(path.read_text().splitlines(), str(path))


def read_environment(path: Path = ENVIRONMENT) -> dict:
    return yaml.safe_load(path.read_text())


def environment_pip_lines(env: dict) -> list[str]:
    """The ``pip:`` list inside ``dependencies`` (exactly one is expected)."""
    sections = [d["pip"] for d in env.get("dependencies") or [] if isinstance(d, dict) and "pip" in d]
    if len(sections) != 1:
        raise ValueError(f"expected one pip: section in dependencies, found {len(sections)}")
    return [str(item) for item in sections[0]]


def read_environment_pins(path: Path = ENVIRONMENT) -> Pins:
    return parse_requirement_lines(environment_pip_lines(read_environment(path)), str(path))


def pyproject_requirements(path: Path = PYPROJECT, extras: tuple[str, ...] = ("test",)) -> list[Requirement]:
    project = tomllib.loads(path.read_text())["project"]
    lines = list(project.get("dependencies", []))
    for extra in extras:
        lines += project.get("optional-dependencies", {}).get(extra, [])
    return [Requirement(line) for line in lines]


# ---------------------------------------------------------------------- checking


def _describe(req: Requirement) -> tuple:
    """What must agree between two pins of one package."""
    return (str(req.specifier), tuple(sorted(req.extras)), str(req.marker or ""), req.url or "")


def pin_differences(left: Pins, right: Pins, left_name: str, right_name: str) -> list[str]:
    """Every package pinned on one side only, or pinned differently on both."""
    problems = []
    for name in sorted(left.keys() | right.keys()):
        if name not in right:
            problems.append(f"{left[name]} is in {left_name} but not in {right_name}")
        elif name not in left:
            problems.append(f"{right[name]} is in {right_name} but not in {left_name}")
        elif _describe(left[name]) != _describe(right[name]):
            problems.append(f"{left_name} has {left[name]} but {right_name} has {right[name]}")
    return problems


def marker_differences(requirements: Iterable[Requirement], pins: Pins) -> list[str]:
    """Dependencies (from pyproject.toml) whose environment marker differs from their pin's:
    a platform that pyproject.toml leaves out must be left out of the pins too (and back)."""
    problems = []
    for req in requirements:
        pin = pins.get(canonicalize_name(req.name))
        if pin is not None and str(req.marker or "") != str(pin.marker or ""):
            problems.append(f"pyproject.toml has {req} but constraints.txt has {pin}: give both "
                            f"the same marker ('; {req.marker or pin.marker}')")
    return problems


def exact_pin_problems(pins: Pins, name: str) -> list[str]:
    """``name`` must be pinned with a single ``==X.Y.Z`` (no range, no wildcard)."""
    req = pins.get(canonicalize_name(name))
    if req is None:
        return [f"{name} is not pinned at all"]
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        return [f"{name} must be pinned exactly (==X.Y.Z), found {req}"]
    return []


def bounded_pin_problems(pins: Pins) -> list[str]:
    """Every pin must be exact or have an upper bound, so a new release can't slip in."""
    problems = []
    for req in pins.values():
        operators = {spec.operator for spec in req.specifier}
        if not operators & {"==", "===", "<", "<=", "~="}:
            problems.append(f"{req} is neither exact nor bounded above")
    return problems


def unpinned_dependencies(requirements: Iterable[Requirement], pins: Pins) -> list[str]:
    """Dependencies (from pyproject.toml) with no line in the constraints, or whose
    exact pin the dependency's own specifier rules out."""
    problems = []
    for req in requirements:
        pin = pins.get(canonicalize_name(req.name))
        if pin is None:
            problems.append(f"{req} (pyproject.toml) has no pin in constraints.txt")
            continue
        for spec in pin.specifier:
            if spec.operator == "==" and "*" not in spec.version and not req.specifier.contains(
                spec.version, prereleases=True
            ):
                problems.append(f"constraints.txt pins {pin} but pyproject.toml asks for {req}")
    return problems


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def unsatisfied_pins(pins: Pins, version_of: Callable[[str], str | None] = installed_version) -> list[str]:
    """Pins that the installed packages (as reported by ``version_of``) do not meet."""
    problems = []
    for req in pins.values():
        if req.marker is not None and not req.marker.evaluate():
            continue
        found = version_of(req.name)
        if found is None:
            problems.append(f"{req} is not installed")
            continue
        try:
            Version(found)
        except InvalidVersion:
            problems.append(f"{req.name} {found!r} is not a valid version")
            continue
        if not req.specifier.contains(found, prereleases=True):
            problems.append(f"{req.name} {found} is installed but the pin is {req}")
    return problems


# ------------------------------------------------------ the real files, checked


def _report(problems: list[str], hint: str = "edit constraints.txt, environment.yml and pyproject.toml together") -> str:
    return "\n".join(["", *problems, f"({hint})"])


def test_environment_yml_pins_match_constraints_both_ways():
    problems = pin_differences(read_constraints(), read_environment_pins(), "constraints.txt", "environment.yml")
    assert not problems, _report(problems)


def test_environment_yml_shape():
    env = read_environment()
    assert env["name"] == "minikernel"
    assert "conda-forge" in env["channels"]
    conda_deps = [d for d in env["dependencies"] if isinstance(d, str)]
    python = [d for d in conda_deps if d.startswith("python")]
    assert python == ["python>=3.11,<3.14"], f"environment.yml should admit Python 3.11-3.13, found {python}"
    assert "pip" in conda_deps
    assert "-e .[test]" in environment_pip_lines(env)


def test_torch_is_pinned_exactly_everywhere():
    """constraints.txt and environment.yml pin torch exactly (the locks follow constraints.txt)."""
    problems = exact_pin_problems(read_constraints(), "torch")
    problems += exact_pin_problems(read_environment_pins(), "torch")
    assert not problems, _report(problems)


OLDEST_TORCH = "2.6.0"  # README, "Your own environment"; the smoke layer installs it and grades every exercise
PINNED_TORCH = "2.13.0"  # constraints.txt (test_torch_is_pinned_exactly_everywhere)


def _minor(version: str, step: int = 0) -> str:
    v = Version(version)
    return f"{v.major}.{v.minor + step}"


def pyproject_torch_problems(requirements: Iterable[Requirement], pins: Pins) -> list[str]:
    """pyproject.toml admits every torch from OLDEST_TORCH to the pinned one's minor release,
    and nothing older or newer, so `pip install -e .` keeps the torch an environment has."""
    torch = [r for r in requirements if canonicalize_name(r.name) == "torch"]
    if len(torch) != 1:
        return [f"pyproject.toml should name torch once, found {[str(r) for r in torch]}"]
    spec = torch[0].specifier
    pinned = str(Version(next(iter(pins["torch"].specifier)).version))
    problems = [f"pyproject.toml's {torch[0]} rules out torch {v}"
                for v in (OLDEST_TORCH, pinned) if not spec.contains(v, prereleases=True)]
    outside = [v for v in (f"{_minor(pinned, 1)}.0", f"{_minor(OLDEST_TORCH, -1)}.99")
               if spec.contains(v, prereleases=True)]
    if outside:
        problems.append(f"pyproject.toml's {torch[0]} admits torch {', '.join(outside)}, outside "
                        f"{OLDEST_TORCH}..{_minor(pinned)}.x")
    return problems


def test_pyproject_admits_torch_from_the_oldest_supported_to_the_pinned_one():
    problems = pyproject_torch_problems(pyproject_requirements(), read_constraints())
    assert not problems, _report(problems)


@pytest.mark.parametrize("line", [
    f"torch>={_minor(OLDEST_TORCH)}",  # no upper bound
    f"torch>={_minor(OLDEST_TORCH, 1)},<{_minor(PINNED_TORCH, 1)}",  # leaves out the oldest
    f"torch>={_minor(OLDEST_TORCH)},<{_minor(PINNED_TORCH)}",  # leaves out the pinned one
    f"torch>={_minor(OLDEST_TORCH, -1)},<{_minor(PINNED_TORCH, 1)}",  # admits an older one
])
def test_pyproject_torch_outside_the_supported_range_is_found(line):
    assert pyproject_torch_problems([Requirement(line)], parse_requirement_lines([f"torch=={PINNED_TORCH}"]))


def test_every_pin_is_exact_or_bounded():
    problems = bounded_pin_problems(read_constraints())
    assert not problems, _report(problems)


def test_every_pyproject_dependency_is_pinned():
    problems = unpinned_dependencies(pyproject_requirements(), read_constraints())
    assert not problems, _report(problems)


def test_pins_carry_pyproject_markers():
    """numba-cuda has no macOS wheel: pyproject.toml, constraints.txt and environment.yml all
    say ``sys_platform != 'darwin'`` (the last through the pin comparison above)."""
    problems = marker_differences(pyproject_requirements(), read_constraints())
    assert not problems, _report(problems)
    assert str(read_environment_pins()["numba-cuda"].marker) == 'sys_platform != "darwin"'


def test_installed_packages_satisfy_the_pins():
    problems = unsatisfied_pins(read_constraints())
    assert not problems, _report(problems, "reinstall: make setup, or rm -rf .venv && make setup")


def lock_problems(lock: dict, pins: Pins) -> list[str]:
    """Lock entries without a hash or an exact pin, and pins the lock's version breaks."""
    problems = []
    for name, entries in lock.items():
        for entry in entries:
            if not entry.hashes:
                problems.append(f"{name}=={entry.version} has no hash")
            if not re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", entry.version):
                problems.append(f"{name}=={entry.version} is not an exact version")
    for name, req in pins.items():
        if name not in lock:
            problems.append(f"{req} (constraints.txt) is not in the lock")
            continue
        for entry in lock[name]:
            if not req.specifier.contains(entry.version, prereleases=True):
                problems.append(f"the lock has {name}=={entry.version} but constraints.txt pins {req}")
    return problems


@pytest.mark.parametrize("python", SUPPORTED_PYTHONS)
def test_lock_pins_every_package_with_hashes_and_agrees_with_constraints(python):
    path = ROOT / f"lock-py{python}.txt"
    assert path.is_file(), f"{path.name} is missing: run make lock"
    text = path.read_text()
    assert "#    make lock" in text.splitlines()[1], f"{path.name} was not written by make lock"
    lock = lockfile.parse_lock(text)
    assert len(lock) > 100, f"{path.name} holds {len(lock)} packages: transitive ones are missing"
    problems = lock_problems(lock, read_constraints())
    assert not problems, _report(problems, "edit constraints.txt, then run make lock")


def test_extra_hashes_are_in_their_lock():
    """The CPU build of torch is accepted by --require-hashes only through its listed hash."""
    for python, pin, digest, filename in _tool("lock").read_extra_hashes():
        name, version = pin.split("==")
        entries = lockfile.read_lock(ROOT / f"lock-py{python}.txt")[lockfile.canonical(name)]
        assert [e.version for e in entries] == [version], f"{filename}: the lock pins {entries}"
        assert digest in entries[0].hashes, f"{filename}'s hash is not in lock-py{python}.txt: run make lock"


def test_supported_pythons_agree_everywhere():
    requires = tomllib.loads(PYPROJECT.read_text())["project"]["requires-python"]
    assert requires == ">=3.11,<3.14"
    assert sorted(f"{a}.{b}" for a, b in bootstrap.SUPPORTED) == list(SUPPORTED_PYTHONS)
    assert _tool("lock").PYTHONS == SUPPORTED_PYTHONS


def test_running_environment_holds_the_locked_versions():
    """What is installed is the lock for this Python; left out only what this torch doesn't need."""
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    lock = lockfile.read_lock(ROOT / f"lock-py{python}.txt")
    torch_needs = lockfile.requirement_names(importlib.metadata.requires("torch") or [])
    needed = set(lockfile.needed_entries(lock, {"torch": torch_needs}))
    problems = []
    for name, entries in lock.items():
        found = installed_version(name)
        applicable = [e for e in entries if _marker_holds(e)]
        if not applicable:
            continue
        if found is None:
            if name in needed:
                problems.append(f"{name} is locked and needed but not installed")
        elif Version(found).public != Version(applicable[0].version).public:
            problems.append(f"{name} {found} is installed, the lock has {applicable[0].version}")
    assert not problems, _report(problems, "reinstall: make setup, or rm -rf .venv && make setup")


def _marker_holds(entry) -> bool:
    from_pin = entry.lines[0].split(";", 1)
    if len(from_pin) == 1:
        return True
    return Marker(from_pin[1].strip().rstrip("\\").strip()).evaluate()


# ---------------------------------------- the checks themselves detect problems


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def mismatched_pair(tmp_path: Path) -> tuple[Pins, Pins]:
    constraints = _write(tmp_path / "constraints.txt", (
        "# comment\n"
        "torch==2.13.0\n"
        "numpy==2.4.6\n"
        "tornado>=6.5.7,<6.6  # trailing comment\n"
        "only-in-constraints==1.0\n"
    ))
    environment = _write(tmp_path / "environment.yml", (
        "name: minikernel\n"
        "channels: [conda-forge]\n"
        "dependencies:\n"
        "  - python=3.11\n"
        "  - pip\n"
        "  - pip:\n"
        "      - torch==2.13.0\n"
        "      - numpy==2.4.5\n"
        "      - tornado<6.6,>=6.5.7\n"
        "      - Only_In_Environment==2.0\n"
        "      - \"-e .[test]\"\n"
    ))
    return read_constraints(constraints), read_environment_pins(environment)


def test_pin_differences_finds_each_mismatch(mismatched_pair):
    constraints, environment = mismatched_pair
    problems = pin_differences(constraints, environment, "constraints.txt", "environment.yml")
    assert problems == [
        "constraints.txt has numpy==2.4.6 but environment.yml has numpy==2.4.5",
        "only-in-constraints==1.0 is in constraints.txt but not in environment.yml",
        "Only_In_Environment==2.0 is in environment.yml but not in constraints.txt",
    ]  # torch and tornado agree (specifier order does not matter); -e is not a pin


def test_pin_differences_is_empty_for_identical_sides(mismatched_pair):
    constraints, _ = mismatched_pair
    assert pin_differences(constraints, dict(constraints), "a", "b") == []


@pytest.mark.parametrize(("constraint", "environment"), [
    ("numba-cuda==0.30.4; sys_platform != 'darwin'", "numba-cuda==0.30.4"),
    ("numba-cuda==0.30.4", "numba-cuda==0.30.4; sys_platform != 'darwin'"),
    ("numba-cuda==0.30.4; sys_platform != 'darwin'", "numba-cuda==0.30.4; sys_platform == 'linux'"),
])
def test_a_marker_missing_or_different_on_either_side_is_found(constraint, environment):
    problems = pin_differences(parse_requirement_lines([constraint]), parse_requirement_lines([environment]),
                               "constraints.txt", "environment.yml")
    assert problems == [f"constraints.txt has {Requirement(constraint)} but environment.yml has "
                        f"{Requirement(environment)}"]


def test_the_same_marker_written_differently_agrees():
    left = parse_requirement_lines(["numba-cuda==0.30.4; sys_platform != 'darwin'"])
    right = parse_requirement_lines(['numba-cuda==0.30.4 ; sys_platform!="darwin"'])
    assert pin_differences(left, right, "a", "b") == []


def test_marker_differences_with_pyproject_are_found():
    pins = parse_requirement_lines(["numba-cuda==0.30.4", "numba==0.68.1; sys_platform != 'darwin'",
                                    "torch==2.13.0"])
    requirements = [Requirement(r) for r in ("numba-cuda; sys_platform != 'darwin'", "numba", "torch>=2.13,<2.14")]
    assert [p.split(" but ")[0] for p in marker_differences(requirements, pins)] == [
        "pyproject.toml has numba-cuda; sys_platform != \"darwin\"",
        "pyproject.toml has numba",
    ]


def test_duplicate_pin_is_an_error():
    with pytest.raises(ValueError, match="listed twice"):
        parse_requirement_lines(["numpy==2.4.6", "NumPy==2.4.5"])


def test_more_than_one_pip_section_is_an_error():
    with pytest.raises(ValueError, match="one pip: section"):
        environment_pip_lines({"dependencies": ["pip", {"pip": []}, {"pip": []}]})


@pytest.mark.parametrize("line", ["torch", "torch>=2.13", "torch==2.*", "torch>=2.13.0,==2.13.0"])
def test_torch_ranges_are_rejected(line):
    assert exact_pin_problems(parse_requirement_lines([line]), "torch")


def test_unbounded_pin_is_rejected():
    pins = parse_requirement_lines(["numpy>=2", "tornado>=6.5.7,<6.6", "nbval==0.11.0"])
    assert bounded_pin_problems(pins) == ["numpy>=2 is neither exact nor bounded above"]


def test_unpinned_and_contradicting_dependencies_are_found():
    pins = parse_requirement_lines(["torch==2.14.0", "tornado>=6.5.7,<6.6"])
    requirements = [Requirement(r) for r in ("torch==2.13.0", "tornado>=6.5.7,<6.6", "numba")]
    assert unpinned_dependencies(requirements, pins) == [
        "constraints.txt pins torch==2.14.0 but pyproject.toml asks for torch==2.13.0",
        "numba (pyproject.toml) has no pin in constraints.txt",
    ]


def test_unsatisfied_pins_compares_installed_versions():
    pins = parse_requirement_lines(["torch==2.13.0", "numpy==2.4.6", "tornado>=6.5.7,<6.6", "absent==1.0"])
    installed = {"torch": "2.13.0+cpu", "numpy": "2.4.5", "tornado": "6.6.0"}
    assert unsatisfied_pins(pins, installed.get) == [
        "numpy 2.4.5 is installed but the pin is numpy==2.4.6",
        "tornado 6.6.0 is installed but the pin is tornado<6.6,>=6.5.7",
        "absent==1.0 is not installed",
    ]  # a local build label (+cpu) satisfies ==2.13.0


CRAFTED_LOCK = """\
# This file was autogenerated by uv via the following command:
#    make lock
contourpy==1.3.3 ; python_full_version < '3.12' \\
    --hash=sha256:{a}
    # via matplotlib
contourpy==1.4.0 ; python_full_version >= '3.12' \\
    --hash=sha256:{b}
    # via matplotlib
matplotlib==3.11.2 \\
    --hash=sha256:{a}
    # via minikernel (pyproject.toml)
nvidia-cublas==13.1.1.3 ; sys_platform == 'linux' \\
    --hash=sha256:{a}
    # via
    #   cuda-toolkit
    #   nvidia-cudnn-cu13
cuda-toolkit==13.0.3.0 \\
    --hash=sha256:{b}
    # via torch
nvidia-cudnn-cu13==9.20.0.48 \\
    --hash=sha256:{a}
    # via torch
sympy==1.14.0 \\
    --hash=sha256:{b}
    # via torch
torch==2.13.0 \\
    --hash=sha256:{a} \\
    --hash=sha256:{b}
    # via
    #   -c constraints.txt
    #   minikernel (pyproject.toml)
""".format(a="a" * 64, b="b" * 64)


def test_lock_reader_keeps_both_marker_variants_and_the_graph():
    lock = lockfile.parse_lock(CRAFTED_LOCK)
    assert [e.version for e in lock["contourpy"]] == ["1.3.3", "1.4.0"]
    assert lock["torch"][0].hashes == ["sha256:" + "a" * 64, "sha256:" + "b" * 64]
    assert lock["nvidia-cublas"][0].needed_by == ["cuda-toolkit", "nvidia-cudnn-cu13"]
    assert lock["torch"][0].needed_by == ["-c constraints.txt", "minikernel (pyproject.toml)"]


def test_a_cpu_torch_leaves_out_only_the_cuda_packages():
    lock = lockfile.parse_lock(CRAFTED_LOCK)
    everything = lockfile.needed_entries(lock, {})
    assert sorted(everything) == sorted(lock)
    cpu = lockfile.needed_entries(lock, {"torch": {"sympy", "filelock"}})
    assert sorted(set(lock) - set(cpu)) == ["cuda-toolkit", "nvidia-cublas", "nvidia-cudnn-cu13"]


def test_lock_reader_refuses_a_version_locked_twice():
    with pytest.raises(ValueError, match="locked twice"):
        lockfile.parse_lock("six==1.17.0 \\\n    --hash=sha256:" + "a" * 64 + "\nsix==1.17.0\n")


def test_lock_problems_finds_missing_hashes_and_broken_pins():
    lock = lockfile.parse_lock("numpy==2.4.5\n    # via minikernel (pyproject.toml)\n")
    pins = parse_requirement_lines(["numpy==2.4.6", "torch==2.13.0"])
    assert lock_problems(lock, pins) == [
        "numpy==2.4.5 has no hash",
        "the lock has numpy==2.4.5 but constraints.txt pins numpy==2.4.6",
        "torch==2.13.0 (constraints.txt) is not in the lock",
    ]


def test_extra_hash_is_added_to_its_entry_and_a_stale_one_is_refused():
    lock_tool = _tool("lock")
    extra = [("3.11", "torch==2.13.0", "sha256:" + "c" * 64, "torch-2.13.0+cpu-cp311.whl")]
    text = lock_tool.add_extra_hashes(CRAFTED_LOCK, "3.11", extra)
    assert lockfile.parse_lock(text)["torch"][0].hashes[-1] == "sha256:" + "c" * 64
    assert lock_tool.add_extra_hashes(text, "3.11", extra) == text  # applied once
    assert lock_tool.add_extra_hashes(CRAFTED_LOCK, "3.12", extra) == CRAFTED_LOCK
    with pytest.raises(lock_tool.LockError, match="does not pin torch==2.14.0"):
        lock_tool.add_extra_hashes(CRAFTED_LOCK, "3.11", [("3.11", "torch==2.14.0", extra[0][2], "x.whl")])


@pytest.mark.parametrize(("system", "release", "expected"), [
    ("Linux", 'ID=ubuntu\nID_LIKE=debian\n', "sudo apt-get install python3.11 python3.11-venv"),
    ("Linux", 'ID="fedora"\n', "sudo dnf install python3.13"),
    ("Linux", 'ID=arch\n', "conda env create -f environment.yml"),
    ("Darwin", "", "numba-cuda"),
    ("Windows", "", "winget install Python.Python.3.13"),
])
def test_install_advice_names_what_to_install(tmp_path, system, release, expected):
    os_release = tmp_path / "os-release"
    os_release.write_text(release)
    assert expected in bootstrap.install_advice(system, os_release)
