"""The dispatch trace widget (widgets/dispatch_trace.py), without a browser.

No ``exercise`` marker: these pass in both modes. torch's column is checked against
what a real torch call shows (a ``TorchDispatchMode`` sees the op only when the
Python key is on the path; autocast changes the result's dtype only when its key has
a kernel); minikernel's against its own dispatcher.
"""
from __future__ import annotations

import ipywidgets as W
import pytest
import torch

from widgets import dispatch_trace
from widgets.dispatch_trace import SCENARIOS, paths, render_html, torch_path


def test_torch_column_ends_at_the_cpu_kernel_after_autograd():
    rows = torch_path("aten::add.Tensor", torch.ones(2), torch.ones(2))
    kept = [r.key for r in rows if r.what != "fallthrough"]
    assert kept == ["AutogradCPU", "CPU"]


def test_torch_column_knows_where_autocast_has_a_kernel():
    with torch.autocast("cpu"):
        mm = [r for r in torch_path("aten::mm", torch.ones(2, 2), torch.ones(2, 2)) if r.key == "AutocastCPU"]
        add = [r for r in torch_path("aten::add.Tensor", torch.ones(2), torch.ones(2)) if r.key == "AutocastCPU"]
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16  # a kernel: it casts
        assert (torch.ones(2) + torch.ones(2)).dtype == torch.float32          # fallthrough: it doesn't
    assert mm[0].what != "fallthrough" and add[0].what == "fallthrough"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_both_columns_agree_on_the_wrapping_layers(name):
    theirs, ours, _ = paths(name)
    strip = {"AutogradCPU": "Autograd", "AutocastCPU": "Autocast"}
    torch_kernels = [strip.get(r.key, r.key) for r in theirs if r.what != "fallthrough" and r.key != "PythonTLSSnapshot"]
    our_kernels = [r.key for r in ours if r.what != "fallthrough"]
    assert our_kernels[0] == "Autograd" == torch_kernels[1 if "autocast" in name else 0]
    if "requires grad" not in name:  # minikernel's autograd layer computes itself when it records
        assert our_kernels[-1] == torch_kernels[-1] == "CPU"
    if "mode" in name:
        assert "Python" in our_kernels and "Python" in torch_kernels


def test_widget_redraws_and_has_a_static_picture():
    view = dispatch_trace("a + b")
    assert isinstance(view, W.VBox)
    before = view.picture.value
    view.scenario.value = "a.mul_(b)"
    assert view.picture.value != before and 'data-key="ADInplaceOrView"' in view.picture.value
    bundle = view._repr_mimebundle_()
    assert "mk-dispatch-trace" in bundle["text/html"] and "dispatch trace" in bundle["text/plain"]
    assert render_html("a + b").count("<li") >= 5
    with pytest.raises(ValueError, match="not one of"):
        dispatch_trace("nope")
