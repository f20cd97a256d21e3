"""``python -m minikernel site`` without a browser: the port check and the math turned into MathML."""
from __future__ import annotations

import re
import socket

import pytest

from minikernel.course import site


def test_a_taken_port_is_an_error_before_any_build(monkeypatch, capsys):
    monkeypatch.setattr(site, "build", lambda: pytest.fail("built although the port is taken"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert site.main(["--port", str(port)]) == 1
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err


def test_math_becomes_mathml_and_code_and_money_stay_as_they_are():
    text = "Mean $\\bar x_i$, then\n\n$$\\sum_i x_i^2$$\n\n`echo $HOME $x$` and $5 or $6.\n\n```\n$a$\n```\n"
    out = site.render_math(text)
    assert re.findall(r'<math [^>]*display="(\w+)"', out) == ["inline", "block"]
    assert "`echo $HOME $x$`" in out and "$5 or $6." in out and "```\n$a$\n```" in out
    assert "\\" not in out.split("`")[0]  # no TeX left before the code span


def test_table_of_contents_links_follow_the_headings_ids():
    page = ('<a href="#why-matters" class="md-nav__link"><span class="md-ellipsis"> Why  matters </span></a>'
            '<a href="#kept">k</a><h2 id="why-synchronize-matters">Why <code>synchronize</code> matters'
            '<a class="anchor-link" href="#why-synchronize-matters">¶</a></h2><h2 id="kept">Kept</h2>')
    fixed = site.fix_toc_links(page)
    assert 'href="#why-synchronize-matters"' in fixed and 'href="#kept"' in fixed and "#why-matters" not in fixed
    assert '<span class="md-ellipsis">Why synchronize matters</span>' in fixed
