"""The kernel trace widget (widgets/kernel_trace.py), without a browser.

No ``exercise`` marker: these pass in both modes. With references on, every trace is
checked against arithmetic the launch implies (a naive matmul reads each element of
``a`` m times, a tiled one m / TILE times) and against torch's result; in student
mode the exercise scenarios must instead name the exercise to finish.
"""
from __future__ import annotations

import re

import ipywidgets as W
import pytest

from minikernel import device as dev
from minikernel.course.exercise import uses_reference
from minikernel.kernels import sizes
from widgets import kernel_trace
from widgets.kernel_trace import SCENARIOS, render_html, safe_trace, trace

REFERENCE = all(uses_reference(i) for i in ("1.2", "2.1", "2.6", "2.9"))
TODO_RE = re.compile(r"Finish exercise (\d+\.\d+) \((\w+)\) to (see this trace|trace yours; meanwhile)")
needs_simulator = pytest.mark.skipif(not dev.SIMULATOR, reason="tracing runs on numba's CUDA simulator only")


def cells(page: str, array: str) -> dict[tuple[int, int], tuple[int, int]]:
    """{(row, col): (reads, writes)} of one matrix, read back from the HTML."""
    found = re.findall(rf'data-array="{array}" data-row="(\d+)" data-col="(\d+)" data-pos="\d+" '
                       r'data-reads="(\d+)" data-writes="(\d+)"', page)
    return {(int(r), int(c)): (int(n), int(w)) for r, c, n, w in found}


def traced_or_todo(scenario: str):
    t, message = safe_trace(scenario)
    if t is None or t.reference:
        match = TODO_RE.search(message)
        assert match and not uses_reference(match.group(1)), message
        return None
    return t


@needs_simulator
def test_naive_matmul_reads_every_element_m_times():
    t = trace("matmul, naive")  # complete code: runs in both modes
    n = 2 * sizes.TILE
    assert t.counts() == {"global reads": 2 * n ** 3, "global writes": n * n, "shared reads": 0, "shared writes": 0}
    assert set(t.per_cell("a").values()) == {n} and set(t.per_cell("b").values()) == {n}
    assert (t.result == t.expected).all()
    page = render_html(t)
    assert all(reads == n and writes == 0 for reads, writes in cells(page, "a").values())
    assert all(writes == 1 for _, writes in cells(page, "out").values()) and len(cells(page, "out")) == n * n


@needs_simulator
def test_tiled_matmul_reads_each_element_tile_times_less():
    t = traced_or_todo("matmul, tiled")
    if t is None:
        return
    naive, n, tile = trace("matmul, naive"), 2 * sizes.TILE, sizes.TILE
    assert (t.result == t.expected).all(), "the traced launch computed a wrong product"
    assert set(t.per_cell("a").values()) == {n // tile} and set(t.per_cell("b").values()) == {n // tile}
    assert t.counts()["global reads"] * tile == naive.counts()["global reads"]
    assert t.counts()["shared reads"] == naive.counts()["global reads"]  # the same products, from shared memory
    assert t.counts()["shared writes"] == t.counts()["global reads"]     # every global read is staged once
    assert set(t.shared) == {"a_tile", "b_tile"} and t.shared["a_tile"] == (tile, tile)
    page = render_html(t)
    assert 'data-kind="global reads"' in page and "shared memory per block" in page
    assert all(reads == n // tile for reads, _ in cells(page, "a").values())


@needs_simulator
def test_transposed_input_needs_more_memory_segments():
    contiguous, transposed = traced_or_todo("map, contiguous input"), traced_or_todo("map, transposed input")
    if contiguous is None or transposed is None:
        return
    assert contiguous.first_warp_reads() == list(range(sizes.THREADS))[:32]  # consecutive threads, addresses
    assert contiguous.sectors() == sizes.THREADS * 4 // 32
    assert transposed.sectors() > contiguous.sectors()
    for t in (contiguous, transposed):
        assert (t.result == t.expected).all()
        page = render_html(t)
        assert f'data-sectors="{t.sectors()}"' in page


@needs_simulator
def test_the_chosen_thread_is_outlined_and_listed():
    t = trace("matmul, naive")
    block, thread = (1, 0, 0), (2, 1, 0)  # computes out[1, TILE + 2]
    page = render_html(t, block, thread)
    row, col = 1, sizes.TILE + 2
    outlined = re.findall(r'data-array="(\w+)" data-row="(\d+)" data-col="(\d+)"[^>]*border:3px', page)
    assert {("a", str(row), str(k)) for k in range(2 * sizes.TILE)} <= set(outlined)
    assert ("out", str(row), str(col)) in set(outlined)
    assert 'data-block="1,0" data-thread="2,1"' in page
    assert f"b(1,0)t(2,1)" in re.search(rf'data-array="out" data-row="{row}" data-col="{col}"[^>]*', page).group(0)


@needs_simulator
def test_widget_redraws_and_names_unfinished_exercises():
    w = kernel_trace("matmul, naive")
    assert isinstance(w, W.VBox) and "mk-kernel-trace" in w._dom_classes
    assert isinstance(w.picture, W.HTML) and "matmul, naive" in w.picture.value
    w.who.value = w.who.options[5][1]
    block, thread = w.who.value
    assert f'data-block="{block[0]},{block[1]}" data-thread="{thread[0]},{thread[1]}"' in w.picture.value
    for scenario in SCENARIOS:
        w.scenario.value = scenario
        page = w.picture.value
        if REFERENCE or scenario == "matmul, naive":
            assert "mk-trace" in page and "Traceback" not in page
        else:
            # the reference's trace meanwhile, labelled as such: never an empty widget
            assert TODO_RE.search(page) and "mk-reference-side" in page and "mk-tcell" in page, page
            assert "the reference solution&#x27;s launch" in page or "the reference solution's launch" in page
    with pytest.raises(ValueError, match="not one of"):
        kernel_trace("conv")


@needs_simulator
def test_unfinished_kernel_shows_which_exercise(monkeypatch):
    """Both modes: with the tiled kernel a stub, the widget names it and draws the reference's
    trace meanwhile, labelled as such; the stub is back in place afterwards."""
    from minikernel.kernels import gpu

    def gpu_matmul(out, out_shape, out_strides, out_offset, a, a_strides, a_offset, b, b_strides, b_offset, inner):
        raise NotImplementedError("exercise 2.9 (gpu_matmul) is not implemented yet")

    monkeypatch.setattr(gpu, "gpu_matmul", gpu_matmul)
    page = kernel_trace("matmul, tiled").picture.value
    assert "Finish exercise 2.9 (gpu_matmul) to trace yours; meanwhile" in page, page
    assert 'class="mk-trace mk-reference-side"' in page and "mk-tcell" in page and "result matches torch" in page
    assert gpu.gpu_matmul is gpu_matmul


def test_without_the_simulator_it_says_how_to_trace(monkeypatch):
    monkeypatch.setattr(dev, "SIMULATOR", False)
    t, message = safe_trace("matmul, naive")
    assert t is None and "NUMBA_ENABLE_CUDASIM=1" in message
