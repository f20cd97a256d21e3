"""``python -m minikernel site``: the course as a static website (MkDocs, Material, mkdocs-jupyter).

    python -m minikernel site              # build when a source changed, serve on 127.0.0.1:8000
    python -m minikernel site --port 8123  # another port
    python -m minikernel site --build      # build only (make site)

The site is built from what is stored, and nothing is executed: README.md (the home
page), docs/*.md, and chapters/*.ipynb with their stored outputs (pictures, tables, the
widgets' stills: the text/html each widget output keeps beside its live view). This
module lays those files out in build/site-src/ and mkdocs.yml builds build/site/ from
there. Nothing is fetched at build or view time: math is turned into MathML here
(latex2mathml), which the browser draws itself; the theme's web fonts are off; the
search index and its scripts ship with the theme. Each chapter page begins with a
line linking to its notebook (a copy of the .ipynb beside the page) and to its
exercises on the exercise page, which is generated from the ``@exercise`` stubs.
"""
from __future__ import annotations

import argparse
import ast
import copy
import functools
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from latex2mathml.converter import convert
from markdown.extensions.toc import slugify

from .ports import tcp_port

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "mkdocs.yml"
SOURCE = ROOT / "build" / "site-src"
SITE = ROOT / "build" / "site"
STAMP = SITE / ".minikernel-site"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DEFAULT_PORT = 8000


def say(message: str) -> None:
    print(f"[site] {message}", flush=True)


# --------------------------------------------------------------------------- math

#: Code that Markdown shows literally: fenced blocks and inline code spans (which may
#: wrap a line, never a blank one). A dollar sign in there is not math.
_CODE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$|(`+)(?:(?!\n[ \t]*\n).)+?\2", re.S | re.M)
#: $$display$$, then $inline$ (no space inside either dollar, none of it a blank line,
#: the closing one not followed by a digit: "$5 and $6" is money, not math).
_MATH = re.compile(r"\$\$(.+?)\$\$|\$(?![\s$])((?:(?!\n[ \t]*\n)[^$])+?)(?<![\s\\])\$(?!\d)", re.S)
#: A character entity, or a character Markdown could read as syntax.
_TEXT_CHAR = re.compile(r"&#?\w+;|[^A-Za-z0-9 ]")


def _entities(mathml: str) -> str:
    """The MathML with every non-alphanumeric character of its text as a numeric entity,
    so that Markdown (Python-Markdown or mistune) passes it through as it is."""
    def text(match: re.Match) -> str:
        return ">" + _TEXT_CHAR.sub(
            lambda c: c.group(0) if len(c.group(0)) > 1 else f"&#{ord(c.group(0))};", match.group(1)) + "<"
    return re.sub(r">([^<]+)<", text, mathml)


def tex_to_mathml(tex: str, display: bool) -> str:
    return _entities(convert(tex.strip(), display="block" if display else "inline"))


def render_math(markdown: str) -> str:
    """``markdown`` with each $...$ and $$...$$ outside code replaced by MathML."""
    def math(match: re.Match) -> str:
        display = match.group(1) is not None
        return tex_to_mathml(match.group(1) if display else match.group(2), display)

    out, last = [], 0
    for code in _CODE.finditer(markdown):
        out += [_MATH.sub(math, markdown[last:code.start()]), code.group(0)]
        last = code.end()
    return "".join(out + [_MATH.sub(math, markdown[last:])])


# ----------------------------------------------------------------------- exercises

def exercises() -> dict[str, list[dict]]:
    """Every ``@exercise("N.k")`` stub under minikernel/ (read from the source, nothing
    imported), by chapter number ("01"), in exercise order."""
    found: dict[str, dict] = {}
    for path in sorted((ROOT / "minikernel").rglob("*.py")):
        if "course" in path.relative_to(ROOT / "minikernel").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "exercise"
                        and deco.args and isinstance(deco.args[0], ast.Constant)):
                    entry = found.setdefault(deco.args[0].value, {"id": deco.args[0].value, "stubs": []})
                    doc = (ast.get_docstring(node) or "").split("\n\n")[0].replace("\n", " ")
                    entry["stubs"].append({"name": node.name, "path": path.relative_to(ROOT).as_posix(),
                                           "line": node.lineno, "doc": doc})
    chapters: dict[str, list[dict]] = {}
    for key in sorted(found, key=lambda i: tuple(int(p) for p in i.split("."))):
        chapters.setdefault(f"{int(key.split('.')[0]):02d}", []).append(found[key])
    return chapters


def _title(notebook: Path) -> str:
    """The notebook's first heading ("Chapter 01 — Strides: ...")."""
    cells = json.loads(notebook.read_text())["cells"]
    first = "".join(next(c for c in cells if c["cell_type"] == "markdown")["source"])
    return first.partition("\n")[0].lstrip("# ").strip() or notebook.stem


def exercise_page(chapters: dict[str, list[dict]], notebooks: list[Path]) -> str:
    titles = {nb.stem[:2]: nb for nb in notebooks}
    lines = ["# Exercises", "",
             "Every function you write, by chapter: its ID, the stub to fill in (file and line) and what "
             "its docstring promises. `make grade ARGS=\"1.2\"` grades one; see [grading](docs/grading.md).", ""]
    for number, entries in chapters.items():
        notebook = titles.get(number)
        heading = f"[{_title(notebook)}](chapters/{notebook.name})" if notebook else f"Chapter {number}"
        lines += [f"## {heading} {{#chapter-{number}}}", "",
                  "| ID | function | stub | what it does |", "|---|---|---|---|"]
        for entry in entries:
            for stub in entry["stubs"]:
                doc = html.escape(stub["doc"]).replace("|", "&#124;")
                lines.append(f"| {entry['id']} | `{stub['name']}` | `{stub['path']}:{stub['line']}` | {doc} |")
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------ staging

def _link_line(notebook: Path, entries: list[dict]) -> str:
    ids = ", ".join(e["id"] for e in entries) or "none"
    return (f"> **Stored outputs, nothing runs here.** This page shows `chapters/{notebook.name}` as last "
            f"executed with the reference solutions. Notebook: [{notebook.name}]({notebook.name}) "
            f"(open it in JupyterLab with `make lab`) · Exercises {ids}: "
            f"[the chapter's exercises](../exercises.html#chapter-{notebook.stem[:2]})\n\n")


def stage_notebook(source: Path, entries: list[dict]) -> dict:
    """The notebook as the site shows it: the widget stills instead of the live views,
    math as MathML, and the line with the links after its title."""
    nb = json.loads(source.read_text())
    nb = copy.deepcopy(nb)
    nb.get("metadata", {}).pop("widgets", None)
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
        if cell["cell_type"] == "markdown":
            cell["source"] = render_math("".join(cell["source"]))
    first = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    title, _, rest = first["source"].partition("\n")
    first["source"] = f"{title}\n\n{_link_line(source, entries)}{rest.lstrip()}"
    return nb


def stage_markdown(text: str) -> str:
    return render_math(re.sub(r"\]\(((?:\.\./)*)README\.md", r"](\1index.md", text))


def stage() -> list[Path]:
    """Lay out build/site-src/ from README, docs and the chapters; the notebooks it staged."""
    shutil.rmtree(SOURCE, ignore_errors=True)
    (SOURCE / "docs").mkdir(parents=True)
    (SOURCE / "chapters").mkdir()
    (SOURCE / "index.md").write_text(stage_markdown((ROOT / "README.md").read_text()))
    for path in sorted((ROOT / "docs").rglob("*")):  # the pages, and the pictures they show
        target = SOURCE / path.relative_to(ROOT)
        if path.is_dir():
            target.mkdir(exist_ok=True)
        elif path.suffix == ".md":
            target.write_text(stage_markdown(path.read_text()))
        else:
            shutil.copyfile(path, target)
    chapters = exercises()
    notebooks = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    for notebook in notebooks:
        staged = stage_notebook(notebook, chapters.get(notebook.stem[:2], []))
        (SOURCE / "chapters" / notebook.name).write_text(json.dumps(staged, indent=1))
    (SOURCE / "exercises.md").write_text(exercise_page(chapters, notebooks))
    return notebooks


# --------------------------------------------------------------------------- build

#: nbconvert's loader of mermaid.js from a CDN (run only for mermaid outputs, which no
#: chapter has): gone, so that nothing on a page points outside the site.
_MERMAID_LOADER = re.compile(r'<script type="module">(?:(?!</script>).)*?mermaid(?:(?!</script>).)*</script>', re.S)
_HEADING = re.compile(r'<h([1-6]) id="([^"]+)"[^>]*>(.*?)</h\1>', re.S)


def fix_toc_links(page: str) -> str:
    """A chapter page whose table-of-contents links point at its headings' ids, with their text.

    mkdocs-jupyter names a heading in the table of contents by its text without the
    code in it ("why `synchronize` matters" -> #why-matters), nbconvert gives the
    heading an id made from all of it (#why-synchronize-matters)."""
    renamed = {}
    for heading in _HEADING.finditer(page):
        text = html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<code>.*?</code>", "", heading.group(3), flags=re.S)))
        renamed.setdefault(slugify(text, "-"), heading.group(2))
    ids = {heading.group(2) for heading in _HEADING.finditer(page)}
    page = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{renamed[m.group(1)]}"'
                  if m.group(1) not in ids and m.group(1) in renamed else m.group(0), page)
    # ... and labels them with the whole heading ("4. : what does" was "4. _call_impl: what model(x) does")
    labels = {h.group(2): re.sub(r"<[^>]+>", "", re.sub(r'<a class="anchor-link".*?</a>', "", h.group(3)))
              for h in _HEADING.finditer(page)}
    return re.sub(r'(<a href="#([^"]+)" class="md-nav__link">\s*<span class="md-ellipsis">)\s*(.*?)\s*(</span>)',
                  lambda m: m.group(1) + labels.get(m.group(2), m.group(3)).strip() + m.group(4), page, flags=re.S)


def inputs() -> list[Path]:
    """What the site is built from: a newer one of these makes the site out of date."""
    stubs = [path for path in (ROOT / "minikernel").rglob("*.py") if "@exercise(" in path.read_text()]
    return [ROOT / "README.md", CONFIG, Path(__file__), *(ROOT / "docs").rglob("*"),
            *(ROOT / "chapters").glob("*.ipynb"), *stubs]


def is_stale() -> bool:
    if not STAMP.exists():
        return True
    built = STAMP.stat().st_mtime
    return any(path.stat().st_mtime > built for path in inputs())


def build() -> float:
    """Stage and build build/site/ (MkDocs, strict: a broken link fails); seconds taken."""
    start = time.monotonic()
    notebooks = stage()
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(CONFIG)],
                            cwd=ROOT, check=False, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    if result.returncode != 0:
        raise SystemExit(f"[site] mkdocs build failed (exit {result.returncode}); see the messages above")
    for notebook in notebooks:  # the notebook itself, beside its page, for the page's link
        shutil.copyfile(notebook, SITE / "chapters" / notebook.name)
        page = SITE / "chapters" / f"{notebook.stem}.html"
        page.write_text(fix_toc_links(_MERMAID_LOADER.sub("", page.read_text())))
    STAMP.write_text("built by python -m minikernel site\n")
    took = time.monotonic() - start
    say(f"built {SITE.relative_to(ROOT)}/ in {took:.1f} s")
    return took


# --------------------------------------------------------------------------- serve

class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a browser that stopped reading
            super().handle_error(request, client_address)


def listen(port: int) -> ThreadingHTTPServer | None:
    """A server of build/site/ bound to 127.0.0.1:``port``; None (and why, on stderr) when
    the port is taken."""
    try:
        return _Server(("127.0.0.1", port), functools.partial(_QuietHandler, directory=str(SITE)))
    except OSError as error:
        print(f"[site] port {port} on 127.0.0.1 is in use ({error.strerror}): stop what listens there, or "
              f"choose another port with `python -m minikernel site --port N`", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minikernel site", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=tcp_port, default=DEFAULT_PORT, help="port on 127.0.0.1 (default 8000)")
    parser.add_argument("--build", action="store_true", help="build (when out of date) and exit")
    parser.add_argument("--force", action="store_true", help="build even when up to date")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    server = None if args.build else listen(args.port)  # the port first: a taken one fails at once
    if server is None and not args.build:
        return 1
    if args.force or is_stale():
        build()
    else:
        say(f"{SITE.relative_to(ROOT)}/ is up to date")
    if server is None:
        return 0
    with server:
        say(f"serving {SITE.relative_to(ROOT)}/ on http://127.0.0.1:{args.port}/ (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
