"""What a chapter shows when your code is unfinished or wrong, so that Run All goes on.

Each chapter calls ``install()`` once, at the top. From then on, in that kernel:

* a cell that reaches an unfinished exercise (a stub's ``NotImplementedError``)
  shows a short box — which exercise, which file and function to write (a link
  opens that file in JupyterLab's editor, at the stub), how to grade it — instead
  of a traceback, and the cell *ends without an error*, so
  JupyterLab's Run All (and nbclient) goes on to the next cell;
* a later cell that needs a name such a cell did not get to define shows one line,
  "waits for exercise N.M", again without an error;
* an error raised inside your own code (a file you write an exercise in) shows the
  traceback trimmed to your frames and the notebook's, plus what the reference
  returns for the same call — the error stays an error;
* every other error is shown exactly as IPython always shows it;
* before each cell, the exercise files you saved since are reloaded in place
  (``stub_reload``), so a cell run again uses your new code without a restart.

How: IPython's ``set_custom_exc`` hook draws the box; a ``post_run_cell`` callback
then clears ``ExecutionResult.error_in_exec`` for the cells it handled, and ipykernel
reads that field, after the callback, to decide the reply's status.

A cell run *without* being stored in the history is a check, not a reading: nbval
runs every cell that way (``store_history=False``). There the box is shown and the
cell still ends in an error whose one line names the exercise ("NameError: name
'x' is not defined: this cell waits for exercise 1.1"), so nbval in student mode
fails exactly the cells that need the learner's code, each naming its exercise.
"""
from __future__ import annotations

import ast
import html
import importlib
import inspect
import os
import types
from dataclasses import dataclass, field
from typing import Any

import ipywidgets
from IPython import get_ipython
from IPython.display import display

from . import exercise as ex, grading, stub_reload

#: The name of this module's state on the IPython shell (one per kernel).
_STATE_ATTR = "_minikernel_notebook_display"


@dataclass
class _State:
    """What the handler remembers between cells of one kernel."""

    pending: dict[str, str] = field(default_factory=dict)  #: name -> exercise it waits for
    handled: bool = False  #: the running cell's error was shown as a box: clear it
    checking: bool = False  #: the running cell is not stored in the history (nbval): keep errors
    cell_names: set[str] = field(default_factory=set)  #: names the running cell assigns


# ----------------------------------------------------------------------------- text


def exercise_location(exercise_id: str) -> tuple[str, str]:
    """``("strides.py path", "function name(s)")`` for a registered exercise.

    The path is relative to the repository (``minikernel/strides.py``).
    """
    entry = ex.registry().get(exercise_id)
    if entry is None:
        return "minikernel/", "the function its message names"
    return f"minikernel/{entry.module.replace('.', '/')}.py", entry.name


def stub_line(exercise_id: str) -> int | None:
    """1-based line of the first stub's ``raise NotImplementedError`` (where the learner
    writes), else of its ``def``; None for an unknown exercise or unreadable source."""
    entry = ex.registry().get(exercise_id)
    if entry is None or not entry.stubs:
        return None
    stub = next(iter(entry.stubs.values()))
    try:
        lines, first = inspect.getsourcelines(stub)
    except (OSError, TypeError):
        return None
    for offset, line in enumerate(lines):
        if "raise NotImplementedError" in line:
            return first + offset
    return next((first + k for k, line in enumerate(lines) if line.lstrip().startswith("def ")), first)


def editor_href(exercise_id: str, notebook_dir: str | None = None) -> str | None:
    """A link that JupyterLab opens in its editor, at the stub: the stub's file relative
    to the notebook's folder (``../minikernel/strides.py#line=40``; the kernel runs
    there, hence the default ``os.getcwd()``), with the editor's 0-based ``#line=``.

    None for an unknown exercise. The lab must serve a folder holding both the
    notebook and the file (``python -m minikernel lab`` serves the course folder).
    """
    entry = ex.registry().get(exercise_id)
    if entry is None or not entry.stubs:
        return None
    source = inspect.getsourcefile(next(iter(entry.stubs.values())))
    if source is None:
        return None
    relative = os.path.relpath(os.path.realpath(source), os.path.realpath(notebook_dir or os.getcwd()))
    href = "/".join(relative.split(os.sep))
    line = stub_line(exercise_id)
    return href if line is None else f"{href}#line={line - 1}"


def stub_id_in(exc: BaseException | None) -> str | None:
    """The exercise named by ``exc`` or by an exception it was raised from (``__cause__``
    / ``__context__``); a wrapper that re-raises a stub's error still counts."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        found = ex.stub_exercise_id(exc)
        if found:
            return found
        exc = exc.__cause__ or exc.__context__
    return None


def todo_text(exercise_id: str) -> str:
    """The box's plain-text form (what nbval and a terminal see)."""
    path, name = exercise_location(exercise_id)
    return (f"Exercise {exercise_id} ({name}) is not written yet.\n"
            f"  Write {name} in {path} (replace its `raise NotImplementedError`), "
            "save it, and run this cell again (no restart: saved files are reloaded).\n"
            f"  Grade it: minikernel.grade(\"{exercise_id}\") here, or "
            f"`python -m minikernel grade {exercise_id}` in a terminal.\n"
            f"  Stuck? MINIKERNEL_SOLUTIONS={exercise_id} make lab runs the reference instead.")


def todo_html(exercise_id: str) -> str:
    """The box as HTML: the same words as ``todo_text``, in a small framed panel."""
    path, name = exercise_location(exercise_id)
    e, n, p = (html.escape(s) for s in (exercise_id, name, path))
    href = editor_href(exercise_id)
    where = (f'<a class="mk-open-stub" href="{html.escape(href, quote=True)}" title="open {p} in the editor">'
             f"<code>{p}</code></a>") if href else f"<code>{p}</code>"
    return (
        '<div class="mk-todo-box" style="border:1px solid #c9a227;background:#fff8e1;border-radius:4px;'
        'padding:6px 10px;font-family:sans-serif;font-size:13px;line-height:1.5;max-width:48em">'
        f"<b>Exercise {e} ({n}) is not written yet.</b><br>"
        f"Write <code>{n}</code> in {where} (the link opens it in the editor; replace its "
        "<code>raise NotImplementedError</code>),"
        " save it, and run this cell again (no restart: saved files are reloaded).<br>"
        f'Grade it: <code>minikernel.grade("{e}")</code> here (or the <i>Grade {e} here</i> button under '
        "this box in the lab), or "
        f"<code>python -m minikernel grade {e}</code> in a terminal.<br>"
        f"Stuck? <code>MINIKERNEL_SOLUTIONS={e} make lab</code> runs the reference instead.</div>")


def show_todo(exercise: str | BaseException) -> None:
    """Show the box of an exercise (its ID, or a stub's error) in the cell's output,
    where a cell catches the stub's error itself; plain text outside IPython.

    In a check (a cell run outside the history, as nbval runs it) the stub's error is
    raised instead, so that the cell shows the box and fails naming the exercise, like
    a cell that does not catch it (module doc).
    """
    exercise_id = exercise if isinstance(exercise, str) else stub_id_in(exercise)
    if exercise_id is None:
        raise ValueError(f"{exercise!r} names no exercise; pass an ID like '1.2' or a stub's NotImplementedError")
    shell = get_ipython()
    state = getattr(shell, _STATE_ATTR, None) if shell is not None else None
    if state is not None and state.checking:
        if isinstance(exercise, BaseException):
            raise exercise
        raise NotImplementedError(f"exercise {exercise_id} ({exercise_location(exercise_id)[1]}) is not implemented yet")
    display(TodoBox(exercise_id))
    show_grade_button(exercise_id, shell)


def waits_text(name: str, exercise_id: str) -> str:
    """The one line shown by a cell that needs what an unfinished exercise's cell did not define."""
    return f"This cell waits for exercise {exercise_id}: `{name}` is defined by a cell above that needs it."


class GradeButton(ipywidgets.VBox):
    """The box's second link: a button that grades its exercise here, in this notebook.

    A click runs ``minikernel.grade(exercise_id)`` (the same as typing it in a new cell)
    and shows the table under the button; click again after editing to grade again.
    """

    def __init__(self, exercise_id: str) -> None:
        self.exercise_id = exercise_id
        self.button = ipywidgets.Button(description=f"Grade {exercise_id} here", icon="check",
                                        tooltip=f'runs minikernel.grade("{exercise_id}") in this notebook')
        self.button.add_class("mk-grade-here")
        self.output = ipywidgets.Output()
        self.button.on_click(self._grade)
        super().__init__([self.button, self.output])

    def _grade(self, _button=None) -> None:
        self.button.disabled, self.button.description = True, f"Grading {self.exercise_id}…"
        try:
            report = grading.grade(self.exercise_id)
            self.output.clear_output()
            with self.output:
                display(report)
        finally:
            self.button.disabled, self.button.description = False, f"Grade {self.exercise_id} here"

    def __repr__(self) -> str:  # what a plain-text frontend (and a stored notebook's text) shows
        return f'(a button here runs minikernel.grade("{self.exercise_id}"))'


def show_grade_button(exercise_id: str, shell=None) -> None:
    """Show the grade button under a box, in a notebook kernel only (a terminal or a
    check has no frontend to click it)."""
    if shell is not None and hasattr(shell, "kernel") and not _checking(shell):
        display(GradeButton(exercise_id))


def _checking(shell) -> bool:
    state = getattr(shell, _STATE_ATTR, None)
    return state is not None and state.checking


class TodoBox:
    """A displayable box for an unfinished exercise (text/plain and text/html)."""

    def __init__(self, exercise_id: str) -> None:
        self.exercise_id = exercise_id

    def __repr__(self) -> str:
        return todo_text(self.exercise_id)

    def _repr_html_(self) -> str:
        return todo_html(self.exercise_id)


# ------------------------------------------------------------------ learner's frames


def _learner_files() -> set[str]:
    """Absolute paths of the modules that hold exercise stubs (the files a learner edits)."""
    files = set()
    for entry in ex.registry().values():
        module = importlib.import_module(f"minikernel.{entry.module}")
        if getattr(module, "__file__", None):
            files.add(os.path.realpath(module.__file__))
    return files


def _is_cell(filename: str) -> bool:
    # ipykernel compiles cells to /tmp/ipykernel_<pid>/<hash>.py; plain IPython to <ipython-input-…>
    return "ipykernel_" in filename or filename.startswith("<ipython-input")


def learner_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` with only the notebook's frames and the frames in the learner's files,
    or None when no frame is in a learner's file (then the error is not theirs)."""
    files = _learner_files()
    kept: list[types.TracebackType] = []
    mine = False
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        real = os.path.realpath(filename)
        if real in files:
            mine = True
            kept.append(tb)
        elif _is_cell(filename):
            kept.append(tb)
        tb = tb.tb_next
    if not mine:
        return None
    rebuilt = None
    for frame_tb in reversed(kept):  # rebuild the chain innermost first
        rebuilt = types.TracebackType(rebuilt, frame_tb.tb_frame, frame_tb.tb_lasti, frame_tb.tb_lineno)
    return rebuilt


def _exercise_of_frame(tb: types.TracebackType | None) -> tuple[str, Any, dict] | None:
    """The innermost frame running an exercise function: (id, stub, its arguments)."""
    found = None
    codes = {stub.__code__: (entry.id, stub)
             for entry in ex.registry().values() for stub in entry.stubs.values()}
    while tb is not None:
        code = tb.tb_frame.f_code
        if code in codes:
            exercise_id, stub = codes[code]
            args = {name: tb.tb_frame.f_locals.get(name)
                    for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]}
            found = (exercise_id, stub, args)
        tb = tb.tb_next
    return found


def expected_text(tb: types.TracebackType | None) -> str | None:
    """"expected vs got" for an error raised inside an exercise function: what the
    reference returns for the arguments the function holds when it raised."""
    found = _exercise_of_frame(tb)
    if found is None:
        return None
    exercise_id, stub, args = found
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    try:
        expected = repr(ex.reference_of(exercise_id, stub)(**args))
    except Exception as err:  # noqa: BLE001 - the reference refusing is also an answer
        expected = f"raises {type(err).__name__}: {err}"
    return (f"Exercise {exercise_id} ({stub.__name__}) raised instead of answering.\n"
            f"  called with: {shown}\n  expected:    {expected}\n  got:         the error below")


# ------------------------------------------------------------------------ IPython


def _assigned_names(source: str) -> set[str]:
    """Top-level names a cell binds (assignments, for/with targets, imports, defs);
    not the locals of functions, classes, lambdas or comprehensions it defines."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # its body is another scope
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return names


def _state(shell) -> _State:
    return getattr(shell, _STATE_ATTR)


def _publish(shell, text: str, html_text: str | None = None) -> None:
    data = {"text/plain": text}
    if html_text is not None:
        data["text/html"] = html_text
    shell.display_pub.publish(data=data, metadata={})


def _handler(shell, etype, value, tb, tb_offset=None) -> None:
    """IPython custom exception handler: see the module docstring."""
    state = _state(shell)
    exercise_id = stub_id_in(value)
    if exercise_id is not None:
        _publish(shell, todo_text(exercise_id), todo_html(exercise_id))
        show_grade_button(exercise_id, shell)
        _end(shell, state, etype, value, str(value).splitlines()[0] if str(value) else f"exercise {exercise_id}")
        # what this cell did not get to define now waits for the exercise
        for name in state.cell_names - set(shell.user_ns):
            state.pending[name] = exercise_id
        return
    if isinstance(value, NameError) and getattr(value, "name", None) in state.pending:
        waited = state.pending[value.name]
        _publish(shell, waits_text(value.name, waited))
        _end(shell, state, etype, value, f"{value}: this cell waits for exercise {waited}")
        for name in state.cell_names - set(shell.user_ns):
            state.pending[name] = waited
        return
    trimmed = learner_traceback(tb)
    if trimmed is not None:
        note = expected_text(tb)
        if note:
            _publish(shell, note)
        stb = shell.InteractiveTB.structured_traceback(etype, value, trimmed, tb_offset=0)
        shell._showtraceback(etype, value, stb)
        return
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)


def _end(shell, state: _State, etype: type, value: BaseException, line: str) -> None:
    """End a handled cell: without an error (reading), or with a one-line one (a check)."""
    if state.checking:
        shell._showtraceback(etype, value, [f"{etype.__name__}: {line}"])
    else:
        state.handled = True


def _pre_run_cell(shell, info) -> None:
    for reloaded in stub_reload.reload_changed():  # the learner's saved edits, in place
        print(reloaded, flush=True)
    state = _state(shell)
    state.handled = False
    state.checking = not getattr(info, "store_history", True)
    state.cell_names = _assigned_names(getattr(info, "raw_cell", "") or "")


def _post_run_cell(shell, result) -> None:
    state = _state(shell)
    if state.handled and result is not None:
        result.error_in_exec = None  # ipykernel reads this after us: the cell ends "ok"
    state.handled = False
    for name in [n for n in state.pending if n in shell.user_ns]:
        del state.pending[name]  # defined since (the learner finished, or redefined it)


def install(shell=None) -> bool:
    """Show unfinished exercises as a short box, and let Run All go on (module doc).

    Call once at the top of a notebook. Returns False outside IPython (nothing to do);
    calling it again in the same kernel changes nothing.
    """
    if shell is None:
        shell = get_ipython()
    if shell is None:
        return False
    if getattr(shell, _STATE_ATTR, None) is not None:
        return True
    setattr(shell, _STATE_ATTR, _State())
    stub_reload.remember()
    shell.set_custom_exc((Exception,), _handler)
    shell.events.register("pre_run_cell", lambda info: _pre_run_cell(shell, info))
    shell.events.register("post_run_cell", lambda result: _post_run_cell(shell, result))
    return True


def load_ipython_extension(shell) -> None:
    """``%load_ext minikernel.course.notebook_display``: the same as ``install()``."""
    install(shell)
