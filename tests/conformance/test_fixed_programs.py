"""Programs ``make fuzz`` found diverging from torch (seeds from 2000 on), kept after the fix as
regression tests: ``retain_grad`` on a view written in place (the gradient kept is the one of
its latest version, also when it is empty)."""
from __future__ import annotations

import pytest

from tests.conformance.programs import run_program

PROGRAMS = {
    11844: [
        ('leaves', [(0, 3), (2, 3), (1, 3)], [True, True, False], 58596),
        ('op', 'fn_split', [1], False),
        ('op', 'squeeze', [1], False),
        ('inplace', 'set_tensor_index', [3], False),
        ('op', 'cat', [4, 2], False),
        ('inplace', 'iadd_index_expr', [0, 5], False, ('tuple', [('tensor', [-2]), ('mask', [False]), ('none',)]), '0d'),
        ('op', 'add', [5, 4], False),
        ('backward', False, False),
    ],
    12360: [
        ('leaves', [(2, 3)], [True], 27127),
        ('inplace', 'set_mask', [0], False),
        ('op', 'T_last', [0], False),
        ('inplace', 'iadd_index_expr', [1, 0], False, ('one', ('none',)), 'one'),
        ('op', 'flatten', [0], False),
        ('inplace', 'retain_grad', [2], False),
        ('inplace', 'fill_', [2], True),
        ('inplace', 'iadd_index_expr', [1, 1], False, ('full_mask', -0.5), '0d'),
        ('inplace', 'set_list', [1], True),
        ('op', 'index_expr', [2], False, ('tuple', [('list', [3]), ('ellipsis',)])),
        ('inplace', 'set_index_expr', [3, 1], False, ('one', ('tensor', [0, -2])), 'one'),
        ('op', 'fn_square', [0], False),
        ('op', 'sigmoid', [1], False),
        ('backward', False, True),
    ],
    15207: [
        ('leaves', [(0, 3)], [True], 35168),
        ('op', 'slice_step', [0], False),
        ('op', 'index_expr', [0], False, ('one', ('mask', [False]))),
        ('inplace', 'iadd_list', [1], True),
        ('op', 'slice_tail', [2], False),
        ('inplace', 'retain_grad', [3], False),
        ('inplace', 'copy_', [1, 1], False),
        ('op', 'contiguous', [1], False),
        ('inplace', 'set_index_expr', [3, 0], False, ('tuple', [('slice', None, -1, 3), ('ellipsis',), ('slice', 2, None, None)]), 'tensor'),
        ('op', 'flatten', [4], False),
        ('op', 'none_index', [5], False),
        ('inplace', 'neg_', [3], False),
        ('op', 'list_index', [2], False),
        ('backward', False, False),
    ],
    16416: [
        ('leaves', [(2, 3), (), ()], [True, False, True], 40690),
        ('op', 'view', [0], False),
        ('inplace', 'retain_grad', [3], False),
        ('inplace', 'set_int', [0], True),
        ('op', 'index_expr', [0], False, ('one', ('int', 1))),
        ('backward', False, False),
    ],
    9198: [
        ('leaves', [(1, 3), (3,), (1, 3)], [False, True, True], 41913),
        ('inplace', 'fill_', [2], False),
        ('op', 'mask_index', [2], False),
        ('op', 'stack', [0, 0], False),
        ('inplace', 'iadd_index_expr', [0, 0], False, ('tuple', [('slice', 0, 2, None), ('tensor', [2, 1])]), 'number'),
        ('op', 'fn_square', [2], False),
        ('op', 'index_expr', [5], False, ('full_mask', 0.5)),
        ('op', 'permute', [1], False),
        ('inplace', 'iadd', [0, 1], False),
        ('inplace', 'retain_grad', [7], False),
        ('op', 'sub', [5, 0], False),
        ('inplace', 'iadd_index_expr', [7, 5], True, ('full_mask', -0.5), 'one'),
        ('backward', False, True),
    ],
}


@pytest.mark.exercise("3.9")  # every program ends in backward or autograd.grad (student mode: TODO)
@pytest.mark.parametrize("seed", sorted(PROGRAMS))
def test_a_program_once_found_diverging_matches_torch(seed):
    run_program(PROGRAMS[seed])
