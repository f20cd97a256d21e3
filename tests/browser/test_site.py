"""The course website (``make site``) in headless Chromium: every page of build/site/.

The site is built first when out of date (``python -m minikernel site`` does the same),
then served from 127.0.0.1 by the same handler the command uses. Every HTML file of the
built site is opened: no failed request, no request leaving 127.0.0.1 (nor a script
or style from outside that could make one), no console error, every image drawn, each
chapter's widget stills, grade table and pictures visible, math drawn as MathML with no
TeX left in the text, and every link to the site itself (pages, files, #anchors) resolving. Then the search box finds a word of chapter 05.
"""
from __future__ import annotations

import functools
import json
import re
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest

from minikernel.course import site as course_site
from tests.browser.conftest import REPO, require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: TeX that was not turned into math: a $...$ holding a command, a sub- or superscript.
LEFT_TEX = re.compile(r"\$[^$\n]{0,80}?(\\[A-Za-z]+|[_^]\{?\w)[^$\n]{0,80}?\$")

#: What one page shows, gathered in the page: links, anchors, images, math, outputs.
SURVEY = r"""() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const prose = document.querySelector("article").cloneNode(true);
  prose.querySelectorAll("code, pre, math, script, style").forEach((e) => e.remove());
  return {
    links: [...document.querySelectorAll("a[href], link[href], script[src], img[src]")]
             .map((e) => e.href || e.src),
    ids: [...document.querySelectorAll("[id], a[name]")].map((e) => e.id || e.name),
    images: [...document.querySelectorAll("article img")].map((e) => ({
      src: e.src.slice(0, 60), complete: e.complete, width: e.naturalWidth, shown: box(e)})),
    outputImages: document.querySelectorAll(".jp-OutputArea-output img").length,
    math: [...document.querySelectorAll("article math")].map((e) => ({
      display: getComputedStyle(e).display, shown: box(e)})),
    stills: [...document.querySelectorAll(".jp-OutputArea-output .mk-static-view")].map(box),
    tables: [...document.querySelectorAll(".jp-OutputArea-output table")].filter(box).length,
    prose: prose.textContent,
    outside: [...document.scripts].map((s) => s.src + " " + s.textContent)
               .concat([...document.querySelectorAll("link[href]")].map((l) => l.href))
               .filter((t) => /(src=|import\(|^)["']?https?:\/\/(?!127\.0\.0\.1)/.test(t))
               .map((t) => t.trim().slice(0, 100)),
  };
}"""


@pytest.fixture(scope="module")
def site_url():
    """build/site/ (built when out of date) served on a free 127.0.0.1 port."""
    if course_site.is_stale():
        course_site.build()
    server = course_site.listen(0)
    assert server is not None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@functools.cache
def stored(notebook: str) -> dict:
    """What chapters/<notebook> stores: widget stills, pictures, grade tables, math."""
    nb = json.loads((REPO / "chapters" / notebook).read_text())
    outputs = [o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", [])]
    markdown = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return {"stills": sum(WIDGET_VIEW in d and "text/html" in d for d in outputs),
            "pictures": sum("image/png" in d for d in outputs),
            "tables": sum("<table" in "".join(d.get("text/html", "")) for d in outputs),
            "math": "$" in re.sub(r"`[^`]*`", "", markdown)}


def pages() -> list[str]:
    site = course_site.SITE
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))


def test_every_page_loads_draws_and_links_within_the_site(site_url, browser):
    require_chromium(browser)
    paths = pages()
    chapters = [p for p in paths if p.startswith("chapters/")]
    assert "index.html" in paths and "exercises.html" in paths and len(chapters) == 10, paths
    assert len([p for p in paths if p.startswith("docs/")]) == len(list((REPO / "docs").glob("*.md")))

    problems: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    current = {"path": ""}
    page.on("console", lambda m: m.type == "error" and problems.append(f"{current['path']}: console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"{current['path']}: page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"{current['path']}: failed request {r.url[:120]}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(
        f"{current['path']}: {r.status} for {r.url[:120]}"))
    page.on("request", lambda r: r.url.startswith((site_url, "data:")) or problems.append(
        f"{current['path']}: request leaves the site: {r.url[:120]}"))

    anchors: dict[str, set[str]] = {}
    links: dict[str, set[str]] = {}
    for path in paths:
        current["path"] = path
        page.goto(site_url + path, wait_until="load")
        page.wait_for_load_state("networkidle")  # the search worker and the icon too
        survey = page.evaluate(SURVEY)
        anchors[path] = set(survey["ids"])
        for link in survey["links"]:
            links.setdefault(link, set()).add(path)
        for image in survey["images"]:
            if not (image["complete"] and image["width"] > 0 and image["shown"]):
                problems.append(f"{path}: image not drawn: {image}")
        for math in survey["math"]:
            if not (math["display"] in ("math", "block math") and math["shown"]):
                problems.append(f"{path}: math not drawn as MathML: {math}")
        for script in survey["outside"]:
            problems.append(f"{path}: a script or style from outside the site: {script!r}")
        if LEFT_TEX.search(survey["prose"]):
            problems.append(f"{path}: TeX left in the text: {LEFT_TEX.search(survey['prose']).group(0)!r}")
        if path in chapters:
            notebook = Path(path).with_suffix(".ipynb").name
            want = stored(notebook)
            got = (sum(survey["stills"]), survey["outputImages"], survey["tables"])
            if got < (want["stills"], want["pictures"], want["tables"]) or len(survey["stills"]) != want["stills"]:
                problems.append(f"{path}: (widget stills, pictures, tables) shown {got}, stored {want}")
            if want["math"] and not survey["math"]:
                problems.append(f"{path}: the notebook has math, the page none")
            for target in (notebook, f"../exercises.html#chapter-{notebook[:2]}"):
                if site_url + str(Path(path).parent / target).replace("chapters/../", "") not in links:
                    problems.append(f"{path}: no link to {target}")
    context.close()

    checked = set()
    for link, where in sorted(links.items()):
        url, fragment = urldefrag(link)
        if not url.startswith(site_url):
            continue
        target = urlsplit(url).path.lstrip("/") or "index.html"
        if url not in checked:
            checked.add(url)
            try:
                urllib.request.urlopen(url, timeout=10).close()
            except urllib.error.URLError as error:
                problems.append(f"{url} (linked from {sorted(where)[0]}): {error}")
                continue
        if fragment and target in anchors and fragment not in anchors[target]:
            problems.append(f"#{fragment} is not on {target} (linked from {sorted(where)[0]})")
    assert len(checked) >= len(paths), f"only {len(checked)} links within the site were found"
    assert not problems, "\n".join(problems[:40])


def test_search_finds_a_word_of_chapter_05(site_url, browser):
    require_chromium(browser)
    page = browser.new_page()
    page.goto(site_url + "index.html")
    page.click("label.md-search__icon[for='__search'], .md-search__input")
    page.fill("input.md-search__input", "welford")
    results = page.locator(".md-search-result__item a")
    # The search index is built in the page by a web worker: 3 s on an idle machine, more than
    # 15 s beside another test layer. This checks what the search finds, not how fast.
    results.first.wait_for(timeout=90_000)
    assert any("05_layernorm_std" in (a.get_attribute("href") or "") for a in results.all())
    page.close()
