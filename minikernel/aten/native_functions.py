"""Every minikernel operator, declared once (PyTorch's ``native_functions.yaml`` and
``derivatives.yaml`` in one list).

An entry says everything the rest of the library needs to know about an operator:

* ``func`` — the schema, in ``native_functions.yaml``'s syntax; alias annotations mark
  views (``Tensor(a) self -> Tensor(a)``) and in-place writes (``Tensor(a!) self``);
* ``dispatch`` — the backend kernel, ``"module.function"`` of a module in
  ``aten/registration.py``'s ``KERNEL_MODULES``, registered at ``CPU`` and ``CUDA``;
* ``autograd`` — what the ``Autograd`` key runs: the name of the recording function in
  ``minikernel.autograd.functions`` (its ``Function`` holds the backward formula),
  ``Inplace(kind)`` for a write, a ``Derivative`` (the formula itself: the node is
  generated, as ``derivatives.yaml`` entries are), or ``NOT_DIFFERENTIABLE`` /
  ``FALLS_THROUGH`` (no Autograd kernel: the key falls through to the backend);
* ``variants`` — ``inplace``: also declare ``<name>_`` (the backend kernel writing into
  ``self``: ``OUT_SELF`` for a chapter 02 kernel's ``out=self``, ``COPY_BACK`` for the
  reference backend's result copied into ``self``);
* ``methods`` / ``inplace_methods`` / ``reflected`` / ``functions`` — the Tensor methods
  (``__radd__``: the operands swapped) and ``minikernel.<name>`` functions it provides.
  With ``binding=GENERATED`` (the default) ``tensor_ops.py`` makes the methods from the
  schema; ``MANUAL`` (``manual_cpp_binding`` in PyTorch) means a hand-written method in
  ``tensor.py`` parses the Python arguments (``view(*sizes)``, overloads) and calls the op;
* ``samples`` — the inputs the conformance tests try (``tests/conformance/op_table.py``
  turns a ``Samples`` into hypothesis strategies), or the name of the table entry that
  tries the operator through a richer call (``"__getitem__"``; ``full`` is reached by
  ``fill_``'s backward), or the test file that does (devices: ``tests/ch02/test_ops.py``).

``aten/registration.py`` registers every entry with the dispatcher, ``tensor_ops.py``
makes the Tensor methods, ``autograd/generated.py`` the nodes of ``Derivative``
entries, and ``tests/test_native_functions.py`` checks that each entry has all its
parts and that no undeclared operator is reachable.

Adding an element-wise operator is one entry here and one kernel (``sqrt`` below and
``unary_ops.sqrt``).
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from ..dispatch.schema import FunctionSchema, parse_schema

#: ``autograd``: no Autograd kernel, the outputs never require grad (comparisons, factories)
NOT_DIFFERENTIABLE = "not differentiable"
#: ``autograd``: no Autograd kernel; the op is recorded elsewhere or not at all (its caller
#: records: ``as_strided``'s ``AsStridedBackward``, ``__setitem__``'s ``index_put_``)
FALLS_THROUGH = "falls through"
#: ``binding``
GENERATED, MANUAL = "generated", "manual"
#: ``variants``' in-place kernels
OUT_SELF, COPY_BACK = "out=self", "copy back"


@dataclass(frozen=True)
class Inplace:
    """The ``Autograd`` kernel of a write: ``autograd.functions.inplace(kind, self, *args)``."""
    kind: str


@dataclass(frozen=True)
class Derivative:
    """A backward formula, as ``derivatives.yaml`` writes one::

        Derivative("SqrtBackward0", self=lambda grad, result: grad / (2 * result))

    ``node`` is the graph node's name (torch's); each keyword names an input and gives its
    gradient from ``grad`` and the values its parameters name (``self``, ``result``, the
    other inputs): the node saves exactly those, like the generated ``SqrtBackward0``."""
    node: str
    formulas: dict[str, Callable]

    def __init__(self, node: str, /, **formulas: Callable):  # "/": a formula may be called self
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "formulas", formulas)


def _formula_text(formula: Callable) -> str:
    """A formula's expression as written (``grad / (2 * result)``), or its parameters when the
    source is not at hand."""
    try:
        source = inspect.getsource(formula)
    except (OSError, TypeError):
        source = ""
    start = source.find("lambda")
    for end in range(len(source), start, -1):  # the longest piece from "lambda" on that parses
        try:
            tree = ast.parse(source[start:end].strip(), mode="eval")
        except SyntaxError:
            continue
        if start >= 0 and isinstance(tree.body, ast.Lambda):
            return ast.unparse(tree.body.body)
    return f"f({', '.join(inspect.signature(formula).parameters)})"


@dataclass(frozen=True)
class Samples:
    """What the conformance tests try an operator on: ``tensors`` operands (``"matrices"``:
    a ``matmul`` pair), of ``dtypes`` (``"floats"`` or ``"numbers"``: floats and int64),
    ``positive`` values, then the Python arguments ``args``. In-place variants are tried
    on float copies."""
    tensors: Union[int, str] = 1
    dtypes: str = "floats"
    positive: bool = False
    args: tuple = ()


@dataclass(frozen=True)
class NativeFunction:
    func: str
    dispatch: str
    autograd: Union[str, Inplace, Derivative]
    variants: tuple[str, ...] = ()
    inplace_kernel: str = ""
    methods: tuple[str, ...] = ()
    inplace_methods: tuple[str, ...] = ()
    reflected: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    binding: str = GENERATED
    samples: Union[Samples, str, None] = None
    schema: FunctionSchema = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "schema", parse_schema(self.func))

    @property
    def name(self) -> str:
        """The qualified name the dispatcher knows it by (``"add"``, ``"select.int"``)."""
        return self.schema.qualified_name

    def describe(self) -> str:
        """The entry as ``native_functions.yaml`` / ``derivatives.yaml`` would write it."""
        lines = [f"- func: {self.func}"]
        if self.inplace_func:
            lines.append(f"  in place: {self.inplace_func}")
        lines.append(f"  dispatch: CPU, CUDA: {self.dispatch}")
        if isinstance(self.autograd, Derivative):
            formulas = ", ".join(f"{arg}: {_formula_text(f)}" for arg, f in self.autograd.formulas.items())
            lines.append(f"  derivative: {self.autograd.node}, {formulas}")
        elif isinstance(self.autograd, Inplace):
            lines.append(f"  autograd: minikernel.autograd.functions.inplace({self.autograd.kind!r}, ...)")
        elif self.autograd in (NOT_DIFFERENTIABLE, FALLS_THROUGH):
            lines.append(f"  autograd: {self.autograd}")
        else:
            lines.append(f"  autograd: minikernel.autograd.functions.{self.autograd}")
        names = self.methods + self.reflected + self.inplace_methods
        if names:
            lines.append(f"  Tensor methods: {', '.join(names)}" + (" (hand-written)" if self.binding == MANUAL else ""))
        if self.functions:
            lines.append(f"  functions: {', '.join(self.functions)}")
        lines.append(f"  samples: {self.samples}")
        return "\n".join(lines)

    @property
    def inplace_func(self) -> Optional[str]:
        """The in-place variant's schema (``add_(Tensor(a!) self, Tensor other) -> Tensor(a!)``)."""
        if "inplace" not in self.variants:
            return None
        args = self.func[self.func.index("(") + 1:self.func.index(")")].replace("Tensor self", "Tensor(a!) self", 1)
        return f"{self.schema.name}_({args}) -> Tensor(a!)"


N = NativeFunction  # short, so that the list below reads like the YAML's entries


def _view_kernel(func: str) -> str:
    """The kernel of a view with a chapter 01 exercise: ``shape.<name>``; ``index`` is indexing's."""
    name = func.split("(")[0]
    return f"{'indexing' if name == 'index' else 'shape'}.{name}"


NUMBERS = "numbers"
BINARY, UNARY, NUM = Samples(2, NUMBERS), Samples(), Samples(dtypes=NUMBERS)

NATIVE_FUNCTIONS: tuple[NativeFunction, ...] = (
    # ------------------------- element-wise, your chapter 02 kernels (binary_ops.py, unary_ops.py)
    N(func="add(Tensor self, Tensor other) -> Tensor", dispatch="binary_ops.add", autograd="add",
      variants=("inplace",), inplace_kernel=OUT_SELF, methods=("add", "__add__"), reflected=("__radd__",),
      inplace_methods=("add_", "__iadd__"), samples=BINARY),
    N(func="sub(Tensor self, Tensor other) -> Tensor", dispatch="binary_ops.sub", autograd="sub",
      variants=("inplace",), inplace_kernel=OUT_SELF, methods=("sub", "__sub__"), reflected=("__rsub__",),
      inplace_methods=("sub_", "__isub__"), samples=BINARY),
    N(func="mul(Tensor self, Tensor other) -> Tensor", dispatch="binary_ops.mul", autograd="mul",
      variants=("inplace",), inplace_kernel=OUT_SELF, methods=("mul", "__mul__"), reflected=("__rmul__",),
      inplace_methods=("mul_", "__imul__"), samples=BINARY),
    N(func="div(Tensor self, Tensor other) -> Tensor", dispatch="binary_ops.div", autograd="div",
      variants=("inplace",), inplace_kernel=OUT_SELF, methods=("div", "__truediv__"), reflected=("__rtruediv__",),
      inplace_methods=("div_", "__itruediv__"), samples=Samples(2, positive=True)),
    N(func="neg(Tensor self) -> Tensor", dispatch="unary_ops.neg", autograd="neg", variants=("inplace",),
      inplace_kernel=OUT_SELF, methods=("neg", "__neg__"), inplace_methods=("neg_",), samples=NUM),
    N(func="exp(Tensor self) -> Tensor", dispatch="unary_ops.exp", autograd="exp", variants=("inplace",),
      inplace_kernel=OUT_SELF, methods=("exp",), inplace_methods=("exp_",), samples=UNARY),
    N(func="log(Tensor self) -> Tensor", dispatch="unary_ops.log", autograd="log", variants=("inplace",),
      inplace_kernel=OUT_SELF, methods=("log",), inplace_methods=("log_",), samples=Samples(positive=True)),
    N(func="relu(Tensor self) -> Tensor", dispatch="unary_ops.relu", autograd="relu", variants=("inplace",),
      inplace_kernel=OUT_SELF, methods=("relu",), inplace_methods=("relu_",), samples=NUM),
    N(func="sigmoid(Tensor self) -> Tensor", dispatch="unary_ops.sigmoid", autograd="sigmoid", variants=("inplace",),
      inplace_kernel=OUT_SELF, methods=("sigmoid",), inplace_methods=("sigmoid_",), samples=UNARY),
    # ------------------------------------- reductions and matmul (reduce_ops.py, linalg.py)
    N(func="sum(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", dispatch="reduce_ops.sum", autograd="sum",
      methods=("sum",), samples=NUM),
    N(func="mean(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", dispatch="reduce_ops.mean",
      autograd="mean", methods=("mean",), samples="mean"),
    N(func="max(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", dispatch="reduce_ops.max", autograd="max",
      methods=("max",), samples="max"),
    N(func="amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor", dispatch="reduce_ops.amax",
      autograd="amax", methods=("amax",), samples="amax"),
    N(func="matmul(Tensor self, Tensor other) -> Tensor", dispatch="linalg.matmul", autograd="matmul",
      methods=("matmul", "__matmul__"), samples=Samples("matrices")),
    # --------- no chapter 02 kernel: the numpy reference (the reference halves of unary_ops.py,
    # --------- binary_ops.py, reduce_ops.py; tensor_compare.py, indexing.py, shape.py's joins)
    N(func="pow(Tensor self, Tensor exponent) -> Tensor", dispatch="binary_ops.pow", autograd="pow",
      methods=("pow", "__pow__"), reflected=("__rpow__",), samples=Samples(dtypes=NUMBERS, args=(2,))),
    N(func="prod(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", dispatch="reduce_ops.prod",
      autograd="prod", methods=("prod",), samples="prod"),
    N(func="where(Tensor condition, Tensor self, Tensor other) -> Tensor", dispatch="tensor_compare.where",
      autograd="where", methods=("where",), functions=("where",), samples="where"),
    N(func="tanh(Tensor self) -> Tensor", dispatch="unary_ops.tanh", autograd="tanh", variants=("inplace",),
      inplace_kernel=COPY_BACK, methods=("tanh",), inplace_methods=("tanh_",), samples=UNARY),
    N(func="sqrt(Tensor self) -> Tensor", dispatch="unary_ops.sqrt",
      autograd=Derivative("SqrtBackward0", self=lambda grad, result: grad / (2 * result)),
      methods=("sqrt",), samples=Samples(positive=True)),
    *(N(func=f"{n}(Tensor self, Tensor other) -> Tensor", dispatch=f"tensor_compare.{n}", autograd=NOT_DIFFERENTIABLE,
        methods=(f"__{n}__",), samples=BINARY) for n in ("gt", "lt", "ge", "le")),
    N(func="eq(Tensor self, Tensor other) -> Tensor", dispatch="tensor_compare.eq", autograd=NOT_DIFFERENTIABLE,
      methods=("eq",), samples=BINARY),
    N(func="index.Tensor(Tensor self, Any indices) -> Tensor", dispatch="indexing.index_tensor",
      autograd="index_tensor", methods=("__getitem__",), binding=MANUAL, samples="__getitem__"),
    N(func="cat(Tensor[] tensors, int dim=0) -> Tensor", dispatch="shape.cat", autograd="cat",
      functions=("cat",), binding=MANUAL, samples="cat"),
    N(func="stack(Tensor[] tensors, int dim=0) -> Tensor", dispatch="shape.stack", autograd="stack",
      functions=("stack",), binding=MANUAL, samples="stack"),
    # --------------------------- views, your chapter 01 code (shape.py; index: indexing.py)
    *(N(func=f, dispatch=_view_kernel(f), autograd=f.split("(")[0], methods=(m,), binding=MANUAL,
        samples=s) for f, m, s in (
        ("view(Tensor(a) self, int[] size) -> Tensor(a)", "view", "view"),
        ("reshape(Tensor(a) self, int[] shape) -> Tensor(a)", "reshape", "reshape"),
        ("permute(Tensor(a) self, int[] dims) -> Tensor(a)", "permute", "permute"),
        ("transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", "transpose", "transpose"),
        ("t(Tensor(a) self) -> Tensor(a)", "t", "t"),
        ("expand(Tensor(a) self, int[] size) -> Tensor(a)", "expand", "expand"),
        ("index(Tensor(a) self, Any indices) -> Tensor(a)", "__getitem__", "__getitem__"),
        ("contiguous(Tensor(a) self) -> Tensor(a)", "contiguous", "contiguous"))),
    N(func="as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)",
      dispatch="shape.as_strided", autograd=FALLS_THROUGH, methods=("as_strided",), binding=MANUAL,
      samples="as_strided"),
    # ---------------------------------- views with no chapter 01 exercise: numpy's header (shape.py)
    *(N(func=f, dispatch=f"shape.{k}", autograd=k, methods=(m,), binding=MANUAL, samples=s) for f, k, m, s in (
        ("select.int(Tensor(a) self, int dim, int index) -> Tensor(a)", "select", "select", "select"),
        ("slice.Tensor(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)",
         "slice_", "narrow", "narrow"),
        ("squeeze(Tensor(a) self) -> Tensor(a)", "squeeze", "squeeze", "squeeze"),
        ("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", "squeeze_dim", "squeeze", "squeeze"),
        ("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", "squeeze_dims", "squeeze", "squeeze(dims)"),
        ("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", "unsqueeze", "unsqueeze", "unsqueeze"),
        ("alias(Tensor(a) self) -> Tensor(a)", "alias", "movedim", "movedim"),
        ("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", "diagonal", "diagonal",
         "diagonal"),
        ("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]", "unbind", "unbind", "unbind"),
        ("split.Tensor(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]", "split", "split", "split"),
        ("split_with_sizes(Tensor(a) self, int[] split_sizes, int dim=0) -> Tensor(a)[]", "split_with_sizes",
         "split", "split(sizes)"),
        ("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", "unfold", "unfold", "unfold"))),
    # -------------------------------------------- writes (copy.py; index_put_: indexing.py)
    N(func="copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", dispatch="copy.copy_",
      autograd=Inplace("copy"), methods=("copy_",), binding=MANUAL, samples="copy_"),
    N(func="fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", dispatch="copy.fill_",
      autograd=Inplace("fill"), methods=("fill_",), binding=MANUAL, samples="fill_"),
    N(func="zero_(Tensor(a!) self) -> Tensor(a!)", dispatch="copy.zero_", autograd=Inplace("zero"),
      methods=("zero_",), binding=MANUAL, samples="zero_"),
    N(func="index_put_(Tensor(a!) self, Any indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
      dispatch="indexing.index_put_", autograd=FALLS_THROUGH, methods=("__setitem__",), binding=MANUAL,
      samples="__setitem__"),
    # ---------------------------------------------------------------- copies (copy.py)
    N(func="clone(Tensor self) -> Tensor", dispatch="copy.clone", autograd="clone", methods=("clone",),
      binding=MANUAL, samples="clone"),
    N(func="_to_copy(Tensor self, *, Any device=None) -> Tensor", dispatch="copy._to_copy",
      autograd=FALLS_THROUGH, methods=("to", "cpu", "cuda"), binding=MANUAL, samples="tests/ch02/test_ops.py"),
    # ------------------------------------- factories: BackendSelect picks the device (factories.py)
    N(func="zeros(int[] size, *, Any dtype=None, Any device=None) -> Tensor", dispatch="factories.zeros",
      autograd=NOT_DIFFERENTIABLE, functions=("zeros",), binding=MANUAL, samples="zeros"),
    N(func="ones(int[] size, *, Any dtype=None, Any device=None) -> Tensor", dispatch="factories.ones",
      autograd=NOT_DIFFERENTIABLE, functions=("ones",), binding=MANUAL, samples="ones"),
    N(func="full(int[] size, Scalar fill_value, *, Any dtype=None, Any device=None) -> Tensor",
      dispatch="factories.full", autograd=NOT_DIFFERENTIABLE, binding=MANUAL, samples="fill_"),
)

BY_NAME: dict[str, NativeFunction] = {f.name: f for f in NATIVE_FUNCTIONS}


def native_function(name: str) -> NativeFunction:
    """The declaration of ``aten::<name>`` (``"add"``, ``"select.int"``)."""
    try:
        return BY_NAME[name.removeprefix("aten::")]
    except KeyError:
        raise KeyError(f"no operator {name!r} is declared in minikernel/aten/native_functions.py") from None
