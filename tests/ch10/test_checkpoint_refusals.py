"""What torch's reentrant checkpoint refuses or warns about, minikernel's does too."""
from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils import checkpoint as torch_ckpt

from minikernel.utils import checkpoint as mk_ckpt
from tests.torch_versions import quoted_since

#: torch's warning, from 2.11 on (2.13's words), when checkpoint is called without use_reentrant.
_PASS_USE_REENTRANT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants.")


@pytest.mark.exercise("10.1")
@pytest.mark.parametrize("how", ["autograd.grad", "backward(inputs=...)"])
def test_grad_through_a_reentrant_checkpoint_is_refused_like_torch(how):
    messages = []
    for ckpt in (torch_ckpt.checkpoint, mk_ckpt.checkpoint):
        x = torch.randn(3, requires_grad=True)
        y = ckpt(torch.sin, x, use_reentrant=True).sum()
        with pytest.raises(RuntimeError) as err:
            torch.autograd.grad(y, x) if how == "autograd.grad" else y.backward(inputs=[x])
        messages.append(str(err.value))
    assert messages[1] == messages[0]


@pytest.mark.exercise("10.1")
def test_leaving_out_use_reentrant_warns_like_torch():
    seen = []
    for ckpt in (torch_ckpt.checkpoint, mk_ckpt.checkpoint):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ckpt(torch.sin, torch.randn(3, requires_grad=True)).sum().backward()
        seen.append([str(w.message) for w in caught if "use_reentrant" in str(w.message)])
    # torch before 2.11 words it otherwise ("In version 2.5 we will raise an exception ..."): there
    # the words of the torch the course pins count
    assert seen[1] == quoted_since("2.11", seen[0], [_PASS_USE_REENTRANT]) and len(seen[0]) == 1
