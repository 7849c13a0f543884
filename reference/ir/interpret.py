"""Execute the IR with numpy: the ladder's rung R3, and the base every later rung runs on.

Each op computes as StableHLO specifies, in its own element type: a float op computes in
float32 (float64 for f64) and rounds once to its result type; a dot or convolution multiplies
the rounded inputs and accumulates in float32 (float64 for f64), as every target in the
catalogue does. Values are numpy arrays of their element type (bf16 and f8 through ml_dtypes).
`tests/reference/test_interpret.py` checks this interpreter against StableHLO's own reference
interpreter (`stablehlo.eval_module` in jaxlib's bindings) on every catalogue entry.

`run_module` takes a `hook`: called for every op as it executes, with the op's qualified
name (the instance naming of hardware_models.workload: "main%7", "main/3:block%2") and its
operand values, it may return replacement results (a fault, or teacher forcing) or None. An
`observe` callback receives every op's results. Loop bodies run every trip; their values are
observed at each trip, so the last trip's are what an observer keeps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from reference.ir.graph import Block, Function, Module, Op, TensorType
from reference.ir.interpret_ops import CannotInterpret, convolution, dot_general, gather, scatter

NUMPY_TYPES = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "i64": np.int64,
    "i32": np.int32,
    "i16": np.int16,
    "i8": np.int8,
    "ui64": np.uint64,
    "ui32": np.uint32,
    "ui16": np.uint16,
    "ui8": np.uint8,
    "i1": np.bool_,
}
FLOAT_TYPES = {"f64", "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2"}
MAX_TRIPS = 100_000  # a while loop's trips before the interpreter gives up (chosen: no catalogue program loops; 100k trips run in seconds)

Hook = Callable[[str, Op, tuple[np.ndarray, ...]], "tuple[np.ndarray, ...] | None"]
Observer = Callable[[str, Op, tuple[np.ndarray, ...]], None]


_NARROW_FLOATS = {np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)}


def is_float(a: np.ndarray) -> bool:
    """A float array, bf16 and f8 included (ml_dtypes' kinds are not "f")."""
    return a.dtype.kind == "f" or a.dtype in _NARROW_FLOATS


def numpy_type(element: str):
    """The numpy dtype of an MLIR element type.

    Raises:
        CannotInterpret: an element type without one (complex, index, an opaque type).
    """
    if element not in NUMPY_TYPES:
        raise CannotInterpret(f"element type {element} cannot be interpreted; known: {', '.join(NUMPY_TYPES)}")
    return NUMPY_TYPES[element]


def compute_type(element: str):
    """What a float op computes in before it rounds to `element`: float64 for f64, else float32."""
    return np.float64 if element == "f64" else np.float32


def as_type(x, t: TensorType) -> np.ndarray:
    """x as an array of t's element type and shape (a float rounds once, to nearest even)."""
    out = np.asarray(x)
    target = numpy_type(t.dtype)
    if t.dtype == "i1":
        out = out.astype(np.float64) != 0 if is_float(out) else out != 0
    elif t.dtype not in FLOAT_TYPES and is_float(out):
        out = np.trunc(out)  # float to integer rounds toward zero
    out = out.astype(target)
    # a scalar type keeps the array's shape: a region's body (a reduce's, a scatter's combiner)
    # runs vectorized over every element it combines
    return np.broadcast_to(out, t.shape) if out.shape != t.shape and t.shape else out


def _wide(x: np.ndarray, element: str) -> np.ndarray:
    return x.astype(compute_type(element)) if element in FLOAT_TYPES else x


# -- elementwise ops: a numpy function of the (widened) operands
def _int_div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.trunc(np.divide(a, b)).astype(a.dtype) if a.dtype.kind in "iu" else np.divide(a, b)


def _rem(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(a, b)


def _logistic(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _erf(x):
    from math import erf

    return np.vectorize(erf, otypes=[x.dtype])(x) if x.size else x


def _erfc(x):
    from math import erfc

    return np.vectorize(erfc, otypes=[x.dtype])(x) if x.size else x


def _round_afz(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _power(a, b):
    with np.errstate(all="ignore"):
        return np.power(a, b)


ELEMENTWISE: dict[str, Callable] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": _int_div,
    "remainder": _rem,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "negate": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "round_nearest_even": np.rint,
    "round_nearest_afz": _round_afz,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.bitwise_not(x),
    "exponential": np.exp,
    "exponential_minus_one": np.expm1,
    "log": np.log,
    "log_plus_one": np.log1p,
    "logistic": _logistic,
    "tanh": np.tanh,
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "power": _power,
    "atan2": np.arctan2,
    "erf": _erf,
    "erfc": _erfc,
    "square": np.square,
    "is_finite": np.isfinite,
    "clamp": lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
    "select": lambda p, a, b: np.where(p, a, b),
    "shift_left": np.left_shift,
    "shift_right_arithmetic": np.right_shift,
}
_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "GE": np.greater_equal,
    "GT": np.greater,
    "LE": np.less_equal,
    "LT": np.less,
}


@dataclass
class Interpreter:
    module: Module
    hook: Hook | None = None
    observe: Observer | None = None
    force: Mapping[str, tuple[np.ndarray, ...]] | None = None  # teacher forcing: results later ops read

    def __post_init__(self):
        self.scopes: list[dict] = []  # the values of the blocks being executed, innermost last

    def run(self, args: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        main = self.module.main
        if len(args) != len(main.args):
            raise CannotInterpret(f"@{main.name} takes {len(main.args)} arguments; {len(args)} given")
        values = {}
        for (name, t), a in zip(main.args, args):
            a = np.asarray(a)
            if tuple(a.shape) != t.shape:
                raise CannotInterpret(f"argument {name} of @{main.name} is {t}; the array given has shape {a.shape}")
            values[name] = as_type(a, t)
        return self.block(main.ops, values, "main")

    # -- control
    def block(self, ops: Sequence[Op], values: dict, instance: str) -> tuple[np.ndarray, ...]:
        self.scopes.append(values)
        try:
            return self._block(ops, values, instance)
        finally:
            self.scopes.pop()

    def _block(self, ops: Sequence[Op], values: dict, instance: str) -> tuple[np.ndarray, ...]:
        for position, op in enumerate(ops):
            short = op.short_name
            if short == "return":
                return tuple(values[v] for v in op.operands)
            operands = tuple(values[v] for v in op.operands)
            results = None
            if self.hook is not None and op.results:
                results = self.hook(f"{instance}{op.results[0]}", op, operands)
            if results is None:
                results = self.execute(op, operands, f"{instance}/{position}:")
            results = tuple(as_type(r, t) for r, t in zip(results, op.result_types))
            if self.observe is not None and op.results:
                self.observe(f"{instance}{op.results[0]}", op, results)
            # teacher forcing stops at loops: a trace keeps a body's last trip, not every trip's
            if (
                self.force is not None
                and op.results
                and ":while" not in instance
                and f"{instance}{op.results[0]}" in self.force
            ):
                results = self.force[f"{instance}{op.results[0]}"]
            values.update(zip(op.results, results))
        return ()

    def call(self, fn: Function, operands, instance: str):
        return self.block(fn.ops, dict(zip((a for a, _ in fn.args), operands)), instance)

    def region(self, block: Block, operands, instance: str = "region"):
        """A region's block: its arguments, and the values of the blocks around it, which a region
        may read (StableHLO's implicit capture: a loop body reading a constant defined outside)."""
        outer = self.scopes[-1] if self.scopes else {}
        return self.block(block.ops, {**outer, **dict(zip((a for a, _ in block.args), operands))}, instance)

    def execute(self, op: Op, x: tuple[np.ndarray, ...], child: str) -> tuple[np.ndarray, ...]:
        short = op.short_name
        if not op.known:
            raise CannotInterpret(f"{op.name} is not an op the IR knows, so it cannot be interpreted")
        if short == "call":
            return self.call(self.module.function(op.callee), x, f"{child}{op.callee}")
        if short == "while":
            cond, body = op.regions
            state = x
            for _ in range(MAX_TRIPS):
                if not bool(self.region(cond, state, f"{child}while")[0]):
                    return state
                state = tuple(as_type(s, t) for s, t in zip(self.region(body, state, f"{child}while"), op.result_types))
            raise CannotInterpret(
                f"{op.name} {op.results[0] if op.results else ''} ran {MAX_TRIPS:,} trips without its "
                "condition turning false; the interpreter stops there"
            )
        method = getattr(self, f"op_{short}", None)
        if method is not None:
            return method(op, *x)
        if short in ELEMENTWISE:
            element = op.operand_types[-1].dtype if short == "select" else op.operand_types[0].dtype
            out = ELEMENTWISE[short](*(_wide(a, element) if a.dtype != np.bool_ else a for a in x))
            return (out,)
        raise CannotInterpret(f"{op.name} cannot be interpreted (no numpy rule for it)")

    # -- ops with attributes
    def op_constant(self, op: Op):
        if op.data is not None:
            return (op.data,)
        if op.splat is not None:
            return (np.full(op.result_types[0].shape, op.splat),)
        value = op.attr("value")
        if isinstance(value, tuple) and all(isinstance(v, (int, bool)) for v in value):
            return (np.array(value).reshape(op.result_types[0].shape),)
        raise CannotInterpret(f"{op.name} {op.results[0]}: its value was not kept ({value})")

    def op_convert(self, op: Op, x):
        element = op.result_types[0].dtype
        return (_wide(x, element) if is_float(x) else x,)

    def op_compare(self, op: Op, a, b):
        element = op.operand_types[0].dtype
        return (_COMPARE[op.attr("comparison_direction")](_wide(a, element), _wide(b, element)),)

    def op_broadcast_in_dim(self, op: Op, x):
        out = op.result_types[0].shape
        dims = op.attr("broadcast_dimensions") or ()
        shape = [1] * len(out)
        for i, d in enumerate(dims):
            shape[d] = x.shape[i]
        return (np.broadcast_to(x.reshape(shape), out),)

    def op_reshape(self, op: Op, x):
        return (np.reshape(x, op.result_types[0].shape),)

    def op_transpose(self, op: Op, x):
        return (np.transpose(x, op.attr("permutation")),)

    def op_slice(self, op: Op, x):
        starts, limits = op.attr("start_indices"), op.attr("limit_indices")
        strides = op.attr("strides") or (1,) * x.ndim
        return (x[tuple(slice(a, b, s) for a, b, s in zip(starts, limits, strides))],)

    def op_dynamic_slice(self, op: Op, x, *starts):
        sizes = op.attr("slice_sizes")
        begin = [int(np.clip(int(s), 0, n - k)) for s, n, k in zip(starts, x.shape, sizes)]
        return (x[tuple(slice(b, b + k) for b, k in zip(begin, sizes))],)

    def op_dynamic_update_slice(self, op: Op, x, update, *starts):
        begin = [int(np.clip(int(s), 0, n - k)) for s, n, k in zip(starts, x.shape, update.shape)]
        out = np.array(x)
        out[tuple(slice(b, b + k) for b, k in zip(begin, update.shape))] = update
        return (out,)

    def op_concatenate(self, op: Op, *xs):
        return (np.concatenate(xs, axis=op.attr("dimension")),)

    def op_pad(self, op: Op, x, value):
        lo, hi, interior = op.attr("edge_padding_low"), op.attr("edge_padding_high"), op.attr("interior_padding")
        shape = [n + (n - 1) * i if n else 0 for n, i in zip(x.shape, interior)]
        spread = np.full(shape, value, dtype=x.dtype)
        spread[tuple(slice(None, None, i + 1) for i in interior)] = x
        out = np.full([s + a + b for s, a, b in zip(shape, lo, hi)], value, dtype=x.dtype)
        # negative edge padding crops
        src = tuple(slice(max(-a, 0), s - max(-b, 0)) for s, a, b in zip(shape, lo, hi))
        dst = tuple(slice(max(a, 0), max(a, 0) + (s - max(-a, 0) - max(-b, 0))) for s, a, b in zip(shape, lo, hi))
        out[dst] = spread[src]
        return (out,)

    def op_iota(self, op: Op, *_):
        t = op.result_types[0]
        d = op.attr("iota_dimension")
        shape = [1] * len(t.shape)
        shape[d] = t.shape[d]
        return (np.broadcast_to(np.arange(t.shape[d]).reshape(shape), t.shape),)

    op_dynamic_iota = op_iota

    def op_reverse(self, op: Op, x):
        return (np.flip(x, axis=tuple(op.attr("dimensions"))),)

    def op_copy(self, op: Op, x):
        return (np.array(x),)

    def op_optimization_barrier(self, op: Op, *xs):
        return xs

    def op_bitcast_convert(self, op: Op, x):
        t = op.result_types[0]
        if x.dtype.itemsize != np.dtype(numpy_type(t.dtype)).itemsize:
            raise CannotInterpret(f"{op.name} {op.results[0]} changes the element width; not interpreted")
        return (x.view(numpy_type(t.dtype)),)

    def op_reduce_precision(self, op: Op, x):
        exponent, mantissa = op.attr("exponent_bits"), op.attr("mantissa_bits")
        narrow = {(5, 10): np.float16, (8, 7): ml_dtypes.bfloat16, (8, 23): np.float32}.get((exponent, mantissa))
        if narrow is None:
            raise CannotInterpret(f"{op.name} to {exponent} exponent and {mantissa} mantissa bits is not interpreted")
        return (x.astype(narrow).astype(x.dtype),)

    # -- contractions: rounded inputs, accumulated in float32 (float64 for f64)
    def op_dot_general(self, op: Op, a, b):
        d = op.attr("dot_dimension_numbers")
        element = op.result_types[0].dtype
        acc = compute_type(element) if element in FLOAT_TYPES else np.int64
        return (dot_general(a.astype(acc), b.astype(acc), d),)

    def op_batch_norm_training(self, op: Op, x, scale, offset):
        """(x - mean) / sqrt(var + epsilon) * scale + offset, with the mean and (biased) variance over every
        axis but feature_index; returns the output, the mean and the variance."""
        x = x.astype(compute_type(op.result_types[0].dtype))
        axes = tuple(i for i in range(x.ndim) if i != op.attr("feature_index", 0))
        mean, var = x.mean(axis=axes), x.var(axis=axes)
        return (self.op_batch_norm_inference(op, x, scale, offset, mean, var)[0], mean, var)

    def op_batch_norm_inference(self, op: Op, x, scale, offset, mean, var):
        """(x - mean) / sqrt(var + epsilon) * scale + offset, the mean and variance given (one per feature)."""
        t, f, eps = compute_type(op.result_types[0].dtype), op.attr("feature_index", 0), float(op.attr("epsilon", 0.0))
        per = lambda v: np.asarray(v, t).reshape([-1 if i == f else 1 for i in range(x.ndim)])  # noqa: E731
        return ((x.astype(t) - per(mean)) / np.sqrt(per(var) + t(eps)) * per(scale) + per(offset),)

    def op_dot(self, op: Op, a, b):
        element = op.result_types[0].dtype
        acc = compute_type(element) if element in FLOAT_TYPES else np.int64
        return (np.dot(a.astype(acc), b.astype(acc)),)

    def op_convolution(self, op: Op, lhs, rhs):
        element = op.result_types[0].dtype
        acc = compute_type(element) if element in FLOAT_TYPES else np.int64
        return (convolution(op, lhs.astype(acc), rhs.astype(acc)),)

    # -- reductions, sorts, gathers and scatters
    def op_reduce(self, op: Op, *x):
        n = len(x) // 2
        inputs, inits = x[:n], x[n:]
        dims = tuple(op.attr("dimensions"))
        body = op.regions[0]
        ufunc = _simple_body(body)
        if ufunc is not None and n == 1:
            element = op.operand_types[0].dtype
            wide = _wide(inputs[0], element)
            return (
                ufunc.reduce(wide, axis=dims, initial=_wide(inits[0], element)[()])
                if wide.size
                else np.broadcast_to(inits[0], op.result_types[0].shape),
            )
        # any body: fold along the reduced axes in order, vectorized over the kept ones
        moved = [np.moveaxis(v, dims, range(len(dims))).reshape((-1, *op.result_types[0].shape)) for v in inputs]
        acc = tuple(np.broadcast_to(i, op.result_types[k].shape) for k, i in enumerate(inits))
        for step in range(moved[0].shape[0]):
            acc = tuple(
                as_type(r, t) for r, t in zip(self.region(body, (*acc, *(m[step] for m in moved))), op.result_types)
            )
        return acc

    def op_sort(self, op: Op, *x):
        dim = op.attr("dimension")
        direction = _simple_comparator(op.regions[0])
        if direction is not None:
            first = x[0].astype(np.float64) if is_float(x[0]) else x[0]
            order = np.argsort(-first if direction in ("GT", "GE") else first, axis=dim, kind="stable")
        else:  # any comparator: a stable merge sort of each slice, asking the comparator region
            order = np.empty(x[0].shape, dtype=np.int64)
            moved = [np.moveaxis(v, dim, -1) for v in x]
            target = np.moveaxis(order, dim, -1)
            for index in np.ndindex(*moved[0].shape[:-1]):
                rows = [m[index] for m in moved]

                def less(i, j, rows=rows):
                    pairs = [v for r in rows for v in (r[i], r[j])]
                    return (
                        -1
                        if bool(self.region(op.regions[0], pairs)[0])
                        else (1 if bool(self.region(op.regions[0], [v for r in rows for v in (r[j], r[i])])[0]) else 0)
                    )

                target[index] = sorted(range(rows[0].shape[0]), key=functools.cmp_to_key(less))
        return tuple(np.take_along_axis(v, order, axis=dim) for v in x)

    def op_top_k(self, op: Op, x):
        k = op.attr("k")
        wide = x.astype(np.float64)
        order = np.argsort(-wide, axis=-1, kind="stable")[..., :k]
        return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)

    def op_gather(self, op: Op, operand, indices):
        return (
            gather(operand, indices, op.attr("dimension_numbers"), op.attr("slice_sizes"), op.result_types[0].shape),
        )

    def op_scatter(self, op: Op, *x):
        if len(x) != 3:
            raise CannotInterpret(f"{op.name} {op.results[0]} scatters {len(x) // 2} operands; one is interpreted")
        operand, indices, updates = x
        combine = lambda old, new: self.region(op.regions[0], (old, new))[0]  # noqa: E731
        return (scatter(operand, indices, updates, op.attr("scatter_dimension_numbers"), combine),)


def _simple_body(body: Block):
    """The ufunc of a reduce body that is one binary op of its two arguments (add, max...), else None."""
    ops = [o for o in body.ops if o.short_name != "return"]
    if len(ops) != 1 or len(body.args) != 2 or set(ops[0].operands) != {a for a, _ in body.args}:
        return None
    return {
        "add": np.add,
        "maximum": np.maximum,
        "minimum": np.minimum,
        "multiply": np.multiply,
        "and": np.logical_and,
        "or": np.logical_or,
    }.get(ops[0].short_name)


def _simple_comparator(body: Block) -> str | None:
    """The direction of a sort comparator that compares the first operand's two elements, else None."""
    returned = body.ops[-1].operands[0]
    first = {body.args[0][0]: 0, body.args[1][0]: 1}
    for o in body.ops:
        if o.results and o.results[0] == returned and o.short_name == "compare":
            if tuple(first.get(v) for v in o.operands) == (0, 1):
                return o.attr("comparison_direction")
    return None


def run_module(
    module: Module,
    args: Sequence[np.ndarray],
    hook: Hook | None = None,
    observe: Observer | None = None,
    force: Mapping | None = None,
) -> tuple[np.ndarray, ...]:
    """Execute the module's entry function on `args` (one array per argument, converted to its type).

    Raises:
        CannotInterpret: an argument of the wrong shape or count, or an op without a numpy rule
            (an opaque op, a custom call); the message names it.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return Interpreter(module, hook, observe, force).run(args)


def trace_values(
    module: Module, args: Sequence[np.ndarray], hook: Hook | None = None, force: Mapping | None = None
) -> tuple[tuple, dict]:
    """(outputs, {qualified name: results}) of one run: every op's results, for op-by-op comparison
    (`force`: teacher forcing, as run_module)."""
    seen: dict[str, tuple[np.ndarray, ...]] = {}
    outputs = run_module(module, args, hook, lambda key, op, results: seen.__setitem__(key, results), force)
    return outputs, seen


@functools.cache
def widened(module: Module) -> Module:
    """The module with every float type widened to f64: the same program run as the float64
    reference of a StableHLO file (R0 for `landscape debug --from-file`)."""
    import dataclasses

    def t(x: TensorType) -> TensorType:
        return TensorType(x.shape, "f64") if x.dtype in FLOAT_TYPES else x

    def op(o: Op) -> Op:
        data = o.data.astype(np.float64) if o.data is not None and o.result_types[0].dtype in FLOAT_TYPES else o.data
        return dataclasses.replace(
            o,
            result_types=tuple(map(t, o.result_types)),
            operand_types=tuple(map(t, o.operand_types)),
            regions=tuple(Block(tuple((a, t(x)) for a, x in b.args), tuple(map(op, b.ops))) for b in o.regions),
            data=data,
        )

    return dataclasses.replace(
        module,
        functions=tuple(
            dataclasses.replace(
                f, args=tuple((a, t(x)) for a, x in f.args), results=tuple(map(t, f.results)), ops=tuple(map(op, f.ops))
            )
            for f in module.functions
        ),
    )


def seeded_arguments(module: Module, seed: int = 0) -> list[np.ndarray]:
    """Arguments for the entry function drawn from `seed`: floats standard normal, integers and
    bools 0 or 1 (a valid index into any dimension)."""
    rng = np.random.default_rng(seed)
    out = []
    for _, t in module.main.args:
        if t.dtype in FLOAT_TYPES:
            out.append(rng.standard_normal(t.shape).astype(numpy_type(t.dtype)))
        else:
            out.append(as_type(rng.integers(0, 2, t.shape), t))
    return out


def arguments_for(module: Module, named: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The entry function's arguments by their source names (Function.arg_names)."""
    main = module.main
    missing = [n for n in main.arg_names if n not in named]
    if missing or len(main.arg_names) != len(main.args):
        raise CannotInterpret(f"no array for argument(s) {', '.join(missing) or '(unnamed)'} of @{main.name}")
    return [named[n] for n in main.arg_names]
