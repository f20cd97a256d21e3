"""Programs ``make fuzz`` found diverging from torch (seeds from 2000 on), kept after the fix as
regression tests: ``retain_grad`` on a view written in place (the gradient kept is the one of
its latest version, also when it is empty); in-place writes into an output of a multi-output
view op (``unbind``) whose source does not require grad, with a value that does (3007, 9129,
9827, 11136: torch refuses them, directly or when the view's ``grad_fn`` is next read)."""
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
    3007: [
        ('leaves', [(1, 3), (2, 1), ()], [False, True, False], 47483),
        ('op', 'detach', [1], False),
        ('inplace', 'set_none', [3], False),
        ('op', 'index_expr', [2], False, ('tuple', [('tensor', [2]), ('list', [-1]), ('int', 2)])),
        ('op', 'unbind_last', [0], False),
        ('op', 'index_expr', [1], False, ('tuple', [('int', 0)])),
        ('op', 'neg', [6], False),
        ('inplace', 'iadd_index_expr', [5, 6], False, ('one', ('slice', None, 0, 1)), 'one'),
        ('op', 'tensor_index', [4], False),
        ('backward', False, True),
    ],
    9129: [
        ('leaves', [(3,), (3,), (1, 3)], [True, True, False], 13434),
        ('op', 'split0', [2], False),
        ('inplace', 'copy_', [3, 0], False),
        ('op', 'T_last', [2], False),
        ('op', 'select_last', [0], False),
        ('op', 'mean_first', [0], False),
        ('inplace', 'hook_double', [0], False),
        ('grad', False, False),
    ],
    9827: [
        ('leaves', [(2, 3), (1, 3), (1, 3)], [False, True, True], 14213),
        ('op', 'rsub', [0, 0], False),
        ('op', 'unbind_last', [3], False),
        ('op', 'tensor_index', [1], False),
        ('op', 'mul', [1, 1], True),
        ('op', 'mul', [5, 2], False),
        ('op', 'detach', [7], True),
        ('inplace', 'iadd_index_expr', [4, 8], False, ('full_mask', 0.5), 'number'),
        ('inplace', 'iadd_index_expr', [4, 1], False, ('tuple', [('mask', [False, False]), ('ellipsis',)]), 'one'),
        ('backward', False, False),
    ],
    11136: [
        ('leaves', [(2, 1), (1, 3), ()], [False, True, True], 10010),
        ('op', 'detach', [1], False),
        ('op', 'unbind_last', [3], False),
        ('inplace', 'set_index_expr', [4, 2], False, ('tuple', [('ellipsis',), ('int', 0)]), 'tensor'),
        ('op', 'contiguous', [1], False),
        ('op', 'sub', [3, 0], False),
        ('op', 'expand', [5], False),
        ('op', 'sum_last', [5], False),
        ('backward', False, False),
    ],
}


@pytest.mark.exercise("3.9")  # every program ends in backward or autograd.grad (student mode: TODO)
@pytest.mark.parametrize("seed", sorted(PROGRAMS))
def test_a_program_once_found_diverging_matches_torch(seed):
    run_program(PROGRAMS[seed])
