"""Exercise 8.1 (minikernel/optim/optimizer.py): param groups, checked and completed like torch's."""
from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, strategies as st

import minikernel.autograd.functions as F
import minikernel.optim as mk_optim
from minikernel.optim import optimizer as mk_optimizer
from tests.ch08.twins import leaves

OVERRIDES = st.dictionaries(st.sampled_from(["lr", "momentum", "weight_decay", "dampening"]),
                            st.sampled_from([0.0, 0.5, 0.01]), max_size=2)


def _outcome(fn):
    """(error type, message, warnings) of fn(); stubs go through."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
            error = None
        except NotImplementedError:
            raise
        except Exception as err:  # noqa: BLE001 - the error is what we compare
            error = err
    return ((type(error).__name__, str(error)) if error else None,
            [(w.category.__name__, str(w.message)) for w in caught])


def _layout(optimizer, params):
    """Groups with each parameter replaced by its position in ``params``."""
    return [{k: ([next(i for i, q in enumerate(params) if q is p) for p in v] if k == "params" else v)
             for k, v in g.items()} for g in optimizer.param_groups]


@st.composite
def group_layouts(draw):
    """(number of params, [(indices, overrides), ...]) — indices may repeat or overlap."""
    n = draw(st.integers(1, 5))
    groups = draw(st.lists(st.tuples(st.lists(st.integers(0, n - 1), min_size=1, max_size=3), OVERRIDES),
                           min_size=1, max_size=3))
    return n, groups


@pytest.mark.exercise("8.1")
@given(group_layouts(), st.sampled_from(["init", "add_param_group"]))
def test_group_layouts_match_torch(layout, how):
    """Options filled from the defaults, same order of keys, same errors and warnings."""
    n, groups = layout
    tparams, mparams = leaves([(2,)] * n)

    def build(optim, params):
        specs = [{"params": [params[i] for i in idx], **over} for idx, over in groups]
        if how == "init":
            return optim.SGD(specs, lr=0.1, momentum=0.9)
        opt = optim.SGD(specs[:1], lr=0.1, momentum=0.9)
        for spec in specs[1:]:
            opt.add_param_group(spec)
        return opt

    made = {}
    mine = _outcome(lambda: made.setdefault("mk", build(mk_optim, mparams)))
    theirs = _outcome(lambda: made.setdefault("torch", build(torch.optim, tparams)))
    assert mine == theirs
    if "torch" in made:
        assert _layout(made["mk"], mparams) == _layout(made["torch"], tparams)
        assert made["mk"].state_dict()["param_groups"] == made["torch"].state_dict()["param_groups"]
        assert repr(made["mk"]) == repr(made["torch"])


@pytest.mark.exercise("8.1")
@pytest.mark.parametrize("case", ["not a dict", "set", "int param", "list param", "None param", "torch tensor",
                                  "non-leaf", "no params key", "single tensor", "tuple", "generator",
                                  "mixed names", "named", "named then unnamed", "overlap"])
def test_errors_and_conversions_match_torch(case):
    tparams, mparams = leaves([(2,), (3,)])
    t_nonleaf = tparams[0] * 2
    m_nonleaf = F.mul(mparams[0], 2.0)

    def group(params, nonleaf):
        a, b = params
        return {"not a dict": [a], "set": {"params": {a}}, "int param": {"params": [a, 3]},
                "list param": {"params": [[a]]}, "None param": {"params": [None]},
                "torch tensor": {"params": [torch.zeros(2)]}, "non-leaf": {"params": [nonleaf]},
                "no params key": {"lr": 0.1}, "single tensor": {"params": b}, "tuple": {"params": (b,)},
                "generator": {"params": (p for p in [b])}, "mixed names": {"params": [("b", b), a]},
                "named": {"params": [("b", b)]}, "named then unnamed": {"params": [b]},
                "overlap": {"params": [b, a]}}[case]

    def run(optim, params, nonleaf):
        first = [("a", params[0])] if case == "named then unnamed" else [params[0]]
        opt = optim.SGD(first, lr=0.1)
        opt.add_param_group(group(params, nonleaf))
        return opt

    made = {}
    mine = _outcome(lambda: made.setdefault("mk", run(mk_optim, mparams, m_nonleaf)))
    theirs = _outcome(lambda: made.setdefault("torch", run(torch.optim, tparams, t_nonleaf)))
    if case == "torch tensor":  # torch's message names the type; ours does the same for a torch tensor
        assert mine[0] == ("TypeError", "optimizer can only optimize Tensors, but one of the params is "
                                        "torch.FloatTensor")
        return
    assert mine == theirs
    if "torch" in made:
        assert _layout(made["mk"], mparams) == _layout(made["torch"], tparams)


@pytest.mark.exercise("8.1")
def test_duplicate_parameter_warns_like_torch():
    tparams, mparams = leaves([(2,)])
    mine = _outcome(lambda: mk_optim.SGD([mparams[0], mparams[0]], lr=0.1))
    theirs = _outcome(lambda: torch.optim.SGD([tparams[0], tparams[0]], lr=0.1))
    assert mine == theirs and mine[1], "a parameter twice in one group: torch warns (UserWarning)"


@pytest.mark.exercise("8.1")
def test_required_option_and_direct_call():
    _, (a, b) = leaves([(2,), (2,)])
    groups = []
    mk_optimizer.add_param_group(groups, {"params": [a], "lr": 0.5}, {"lr": mk_optimizer.required, "momentum": 0})
    assert groups == [{"params": [a], "lr": 0.5, "momentum": 0}]
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization "
                                         "parameter lr"):
        mk_optimizer.add_param_group(groups, {"params": [b]}, {"lr": mk_optimizer.required})
    assert len(groups) == 1, "a refused group is not appended"


@pytest.mark.exercise("8.1")
def test_the_notes_weight_bn_bias_groups():
    """Weights with decay, BatchNorm scales and biases without: three groups, like the notes'."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Linear(4, 2))
    tparams = list(net.parameters())
    mparams = [mk_optimizer.Tensor.from_torch(p.detach().clone()).requires_grad_() for p in tparams]
    twin = dict(zip(map(id, tparams), mparams))
    g_bn, g_weights, g_biases = [], [], []
    for module in net.modules():
        if hasattr(module, "bias") and isinstance(module.bias, torch.nn.Parameter):
            g_biases.append(module.bias)
        if isinstance(module, torch.nn.BatchNorm2d):
            g_bn.append(module.weight)
        elif hasattr(module, "weight") and isinstance(module.weight, torch.nn.Parameter):
            g_weights.append(module.weight)
    made = {}
    for name, optim, pick in (("mk", mk_optim, lambda ps: [twin[id(p)] for p in ps]), ("torch", torch.optim, list)):
        opt = optim.SGD(pick(g_bn), lr=0.01, momentum=0.937, nesterov=True)
        opt.add_param_group({"params": pick(g_weights), "weight_decay": 5e-4})
        opt.add_param_group({"params": pick(g_biases)})
        made[name] = opt
    assert repr(made["mk"]) == repr(made["torch"])
    assert made["mk"].state_dict()["param_groups"] == made["torch"].state_dict()["param_groups"]
