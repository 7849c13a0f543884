"""Build the IR from StableHLO text by walking the MLIR module with jaxlib's bindings.

No hand-written parser: MLIR parses the text; this module reads ops, types and attributes
through the bindings' typed accessors (DotDimensionNumbers, ConvDimensionNumbers, dense
arrays). Ops outside HANDLED, and ops of dialects the context does not register (their
attributes and operands are unchecked), are kept as opaque ops (`known=False`) with their name
and types, so a target can still cost them as a fallback; nothing is dropped.

Hostile text is refused before it can crash anything (`reference.ir.limits`): brackets nested
too deep for MLIR's recursive parser, regions and calls nested past MAX_NESTING, recursive calls.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from reference.errors import MalformedIR
from reference.ir.graph import (
    Block,
    ConvDims,
    DotDims,
    Function,
    GatherDims,
    Module,
    Op,
    Origin,
    ScatterDims,
    TensorType,
    element_bytes,
)
from reference.ir.limits import MAX_NESTING, check_calls, check_text
from reference.ir.mlir_context import make_context

ELEMENTWISE = {
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "maximum",
    "minimum",
    "negate",
    "abs",
    "sign",
    "floor",
    "ceil",
    "round_nearest_afz",
    "round_nearest_even",
    "compare",
    "select",
    "convert",
    "clamp",
    "and",
    "or",
    "xor",
    "not",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "is_finite",
    "real",
    "imag",
    "popcnt",
    "count_leading_zeros",
    "square",  # chlo.square: x * x
    "batch_norm_inference",  # per element: (x - mean) * rsqrt(var + eps) * scale + offset
}
TRANSCENDENTAL = {
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "logistic",
    "tanh",
    "sine",
    "cosine",
    "tan",
    "sqrt",
    "rsqrt",
    "cbrt",
    "power",
    "atan2",
    "erf",
    "erfc",
    "erf_inv",
    "lgamma",
    "digamma",  # chlo.erf / chlo.erfc: one library call per element on a GPU (erff, erfcf)
}
DATA_MOVEMENT = {
    "top_k",
    "sort",  # chlo.top_k and sort: comparisons only
    "dynamic_iota",  # torch-mlir's iota
    "constant",
    "broadcast_in_dim",
    "broadcast",
    "reshape",
    "transpose",
    "slice",
    "dynamic_slice",
    "dynamic_update_slice",
    "concatenate",
    "pad",
    "gather",
    "scatter",
    "iota",
    "reverse",
    "get_tuple_element",
    "tuple",
    "bitcast_convert",
    "optimization_barrier",
    "copy",
}
CONTRACTION = {"dot_general", "dot", "convolution"}
# Batch norm as one op (torch-xla lowers LayerNorm to batch_norm_training over a [1, rows, d] view);
# counted by its own rule (reference/ir/counters.py), and a composite kept whole for the diff.
BATCH_NORMS = {"batch_norm_training", "batch_norm_inference"}
REDUCTION = {"reduce", "reduce_window", "reduce_precision", "batch_norm_training"}
CONTROL = {"while", "case", "if", "return", "call", "func", "custom_call"}
HANDLED = ELEMENTWISE | TRANSCENDENTAL | DATA_MOVEMENT | CONTRACTION | REDUCTION | CONTROL


# A custom_call whose target is `mhlo.NAME` carries an MHLO op that StableHLO lacks (torch-xla
# writes GELU's erf as `custom_call @mhlo.erf`); where NAME is an op of the tables above, the
# importer reads it as that op, named `mhlo.NAME`, so it is costed as the op, not as a fallback.
MHLO_TARGET = "mhlo."


def is_composite(op: Op) -> bool:
    """An op that one compiler keeps whole and another decomposes: CHLO's and MHLO's (erf, erfc,
    square, top_k) and batch norm."""
    return op.name.startswith(("chlo.", MHLO_TARGET)) or (op.short_name in BATCH_NORMS and op.known)


def category(op: Op) -> str:
    """contraction, elementwise, transcendental, reduction, data_movement, control or unknown."""
    short = op.short_name
    for name, members in (
        ("contraction", CONTRACTION),
        ("transcendental", TRANSCENDENTAL),
        ("elementwise", ELEMENTWISE),
        ("reduction", REDUCTION),
        ("data_movement", DATA_MOVEMENT),
        ("control", CONTROL),
    ):
        if short in members and op.known:
            return name
    return "unknown"


_QUOTED = re.compile(r'"([^"]*)"(?::(\d+))?')


def origin_of(loc_text: str) -> Origin:
    """Provenance from an MLIR location's text.

    JAX locations name the op by its name stack (`"jit(f)/layers.0/dot_general"`); torch-mlir's
    are chains of file:line callsites. scope is the first name, or the innermost file:line;
    source is the first file:line outside site-packages (the user's code). Text without
    locations (torch-xla's, a file's) gets MLIR's own, its line in the text: "line N".
    """
    names, files, source = [], [], ""
    for text, line in _QUOTED.findall(loc_text):
        if not text:
            continue
        if not line:
            names.append(text)
            continue
        if text == "-":  # text without locations: MLIR's own, the line in the text it parsed
            files.append(f"line {line}")
            continue
        where = f"{text.rsplit('/', 1)[-1]}:{line}"
        files.append(where)
        if not source and "site-packages" not in text and not text.startswith("<frozen"):
            source = where
    scope = names[0] if names else (files[0] if files else "")
    return Origin(scope=scope, source=source, loc=loc_text)


def _printable(message: str) -> str:
    """MLIR's message with control characters escaped, so it stays one line on a terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


# Largest dense constant whose text the importer keeps as an attribute (bigger ones: its type).
_DENSE_TEXT_ELEMENTS = 16


class _Reader:
    def __init__(self, ctx):
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        self.ir, self.stablehlo, self.ctx = ir, stablehlo, ctx
        self.ids: dict[Any, str] = {}
        self.constants: dict[str, float] = {}  # value id -> scalar value of splat constants
        self.counter = 0
        self.current_op = ""
        self.function_name = ""
        self.depth = 0  # regions around the op being read

    # -- values and types
    def name(self, value, prefix="%") -> str:
        if value not in self.ids:
            self.ids[value] = f"{prefix}{self.counter}"
            self.counter += 1
        return self.ids[value]

    def tensor_type(self, mlir_type) -> TensorType:
        ir = self.ir
        if isinstance(mlir_type, ir.RankedTensorType):
            t = mlir_type
            if not t.has_static_shape:
                raise MalformedIR(f"dynamic shape {t} is not supported")
            element_bytes(str(t.element_type))  # refuses a type the IR cannot count the bytes of
            return TensorType(tuple(t.shape), str(t.element_type))
        if isinstance(mlir_type, ir.UnrankedTensorType):
            raise MalformedIR(f"unranked tensor {mlir_type} is not supported")
        return TensorType((), str(mlir_type))

    # -- attributes
    def attribute(self, key: str, attr) -> Any:
        try:
            return self._attribute(key, attr)
        except (TypeError, ValueError):  # a known key on an attribute of another kind (opaque ops)
            return str(attr)

    def _attribute(self, key: str, attr) -> Any:
        ir, sh = self.ir, self.stablehlo
        if key == "dot_dimension_numbers":
            d = sh.DotDimensionNumbers(attr)
            return DotDims(
                tuple(d.lhs_batching_dimensions),
                tuple(d.rhs_batching_dimensions),
                tuple(d.lhs_contracting_dimensions),
                tuple(d.rhs_contracting_dimensions),
            )
        if key == "dimension_numbers" and self.current_op == "stablehlo.convolution":
            d = sh.ConvDimensionNumbers(attr)
            return ConvDims(
                d.input_batch_dimension,
                d.input_feature_dimension,
                tuple(d.input_spatial_dimensions),
                d.kernel_input_feature_dimension,
                d.kernel_output_feature_dimension,
                tuple(d.kernel_spatial_dimensions),
                d.output_batch_dimension,
                d.output_feature_dimension,
                tuple(d.output_spatial_dimensions),
            )
        if key == "dimension_numbers" and self.current_op == "stablehlo.gather":
            d = sh.GatherDimensionNumbers(attr)
            return GatherDims(
                tuple(d.offset_dims),
                tuple(d.collapsed_slice_dims),
                tuple(d.start_index_map),
                d.index_vector_dim,
                tuple(d.operand_batching_dims),
                tuple(d.start_indices_batching_dims),
            )
        if key == "scatter_dimension_numbers":
            d = sh.ScatterDimensionNumbers(attr)
            return ScatterDims(
                tuple(d.update_window_dims),
                tuple(d.inserted_window_dims),
                tuple(d.scattered_dims_to_operand_dims),
                d.index_vector_dim,
                tuple(d.input_batching_dims),
                tuple(d.scatter_indices_batching_dims),
            )
        if key == "comparison_direction":
            return sh.ComparisonDirectionAttr(attr).value
        if isinstance(attr, ir.DenseI64ArrayAttr):
            return tuple(attr)
        if isinstance(attr, (ir.BoolAttr, ir.IntegerAttr, ir.FloatAttr, ir.StringAttr, ir.FlatSymbolRefAttr)):
            return attr.value
        if isinstance(attr, ir.DenseIntElementsAttr) and not attr.is_splat and len(attr) <= 64:
            return tuple(int(v) for v in np.array(attr).ravel())  # padding pairs, small index lists
        if isinstance(attr, ir.DenseElementsAttr):
            dense = attr
            if dense.is_splat:
                splat = dense.get_splat_value()
                if isinstance(splat, (ir.IntegerAttr, ir.FloatAttr)):
                    return ("splat", splat.value)
            if math.prod(attr.type.shape) > _DENSE_TEXT_ELEMENTS:
                return f"dense<...> : {attr.type}"
            text = str(attr)
            return text if len(text) <= 80 else f"dense<...> : {attr.type}"
        return str(attr)

    # -- ops
    def op(self, mlir_op) -> Op:
        operation = mlir_op.operation
        name = operation.name
        short = name.split(".", 1)[-1]
        self.current_op = name
        attrs_in = operation.attributes
        attrs = tuple(
            (attrs_in[i].name, self.attribute(attrs_in[i].name, attrs_in[i].attr)) for i in range(len(attrs_in))
        )
        operands = tuple(self.name(v) for v in operation.operands)
        operand_types = tuple(self.tensor_type(v.type) for v in operation.operands)
        results = tuple(self.name(r) for r in operation.results)
        result_types = tuple(self.tensor_type(r.type) for r in operation.results)
        known = short in HANDLED and self.ctx.is_registered_operation(name)
        target = dict(attrs).get("call_target_name") if short == "custom_call" else None
        if (
            isinstance(target, str)
            and target.startswith(MHLO_TARGET)
            and target[len(MHLO_TARGET) :] in HANDLED - CONTROL
        ):
            name, short, known = target, target[len(MHLO_TARGET) :], True
        regions = self.regions(operation)
        callee = dict(attrs).get("callee") if short == "call" and known else None
        data = self.dense_data(attrs_in["value"]) if short == "constant" and "value" in attrs_in else None
        op = Op(
            name=name,
            results=results,
            result_types=result_types,
            operands=operands,
            operand_types=operand_types,
            attrs=attrs,
            regions=regions,
            callee=callee,
            origin=origin_of(str(operation.location)),
            known=known,
            data=data,
        )
        if op.splat is not None:
            self.constants[results[0]] = op.splat
        if short == "while" and known:
            op = _with_trip_count(op, self.constants)
        return op

    def dense_data(self, attr):
        """A non-splat dense constant's elements as a read-only numpy array, or None (a splat, a
        constant past MAX_DENSE_ELEMENTS, or an attribute of another kind)."""
        ir = self.ir
        if not isinstance(attr, ir.DenseElementsAttr):
            return None
        shape = tuple(attr.type.shape)
        if math.prod(shape) > MAX_DENSE_ELEMENTS:
            return None
        if attr.is_splat:  # a number is kept as ("splat", value); a bool splat only here
            splat = attr.get_splat_value()
            if not isinstance(splat, ir.BoolAttr):
                return None
            array = np.full(shape, bool(splat.value))
            array.flags.writeable = False
            return array
        element = str(attr.type.element_type)
        try:
            array = np.array(attr)
        except TypeError:  # bf16 and f8 have no buffer format: MLIR widens them to f32 (exactly)
            array = _widened(attr, ir)
        if array.dtype == np.bool_ or element == "i1":
            array = array.astype(np.bool_)
        array = np.ascontiguousarray(array.reshape(shape))
        array.flags.writeable = False
        return array

    def regions(self, operation) -> tuple[Block, ...]:
        """The op's regions, each a single block; nesting bounded by MAX_NESTING."""
        present = [region for region in operation.regions if len(region.blocks)]
        if not present:
            return ()
        if self.depth >= MAX_NESTING:
            raise MalformedIR(f"func @{self.function_name}: regions nest more than {MAX_NESTING} deep")
        for region in present:
            if len(region.blocks) > 1:
                raise MalformedIR(
                    f"func @{self.function_name}: {operation.name} has a region of {len(region.blocks)} blocks; "
                    "only single-block regions are supported"
                )
        self.depth += 1
        try:
            return tuple(self.block(region.blocks[0]) for region in present)
        finally:
            self.depth -= 1

    def block(self, block) -> Block:
        args = tuple((self.name(a, "%iter"), self.tensor_type(a.type)) for a in block.arguments)
        return Block(args, tuple(self.op(o) for o in block.operations))

    def function(self, fn) -> Function:
        attrs = fn.operation.attributes
        name = attrs["sym_name"].value
        self.function_name = name
        blocks = fn.regions[0].blocks
        if len(blocks) != 1:
            what = "is a declaration without a body" if not len(blocks) else f"has {len(blocks)} blocks"
            raise MalformedIR(f"func @{name} {what}; the IR needs every function defined in one block")
        block = blocks[0]
        args = tuple((self.name(a, "%arg"), self.tensor_type(a.type)) for a in block.arguments)
        arg_names = tuple(_arg_name(str(a.location)) for a in block.arguments)
        fn_type = attrs["function_type"].value
        results = tuple(self.tensor_type(t) for t in fn_type.results)
        return Function(name, args, results, tuple(self.op(o) for o in block.operations), arg_names)


# Largest dense constant whose elements the importer keeps for the interpreter (16M elements).
MAX_DENSE_ELEMENTS = 1 << 24


def _widened(attr, ir) -> np.ndarray:
    """A dense constant of a type numpy's buffers lack (bf16, f8), widened to f32 by StableHLO's own
    reference interpreter: a one-op module converting it, evaluated."""
    from jaxlib.mlir.dialects import stablehlo

    shape = "x".join(map(str, attr.type.shape))
    wide = f"tensor<{shape + 'x' if shape else ''}f32>"
    text = (
        f"func.func @main() -> {wide} {{\n  %0 = stablehlo.constant {attr}\n"
        f"  %1 = stablehlo.convert %0 : ({attr.type}) -> {wide}\n  func.return %1 : {wide}\n}}"
    )
    (result,) = stablehlo.eval_module(ir.Module.parse(text), [])
    return np.array(result)


def _arg_name(loc_text: str) -> str:
    match = re.match(r'loc\("([^"]*)"\)$', loc_text)
    return match.group(1) if match else ""


def _splats(ops) -> dict[str, float]:
    """value id -> scalar of every splat constant among ops."""
    return {o.results[0]: o.splat for o in ops if o.splat is not None}


def _with_trip_count(op: Op, constants: dict[str, float]) -> Op:
    """Static trip count of `while (i < N) { ...; i = i + step }` with constant start, N, step."""
    cond, body = op.regions
    cond_constants, body_constants = _splats(cond.ops), _splats(body.ops)
    arg_ids = [a for a, _ in cond.args]
    for c in cond.ops:
        if c.short_name != "compare" or c.attr("comparison_direction") != "LT":
            continue
        if c.operands[0] not in arg_ids or c.operands[1] not in cond_constants:
            continue
        index = arg_ids.index(c.operands[0])
        start = constants.get(op.operands[index])
        body_arg = body.args[index][0]
        returned = body.ops[-1].operands[index]
        step = next(
            (
                body_constants.get(o.operands[1])
                for o in body.ops
                if o.results and o.results[0] == returned and o.short_name == "add" and o.operands[0] == body_arg
            ),
            None,
        )
        limit = cond_constants[c.operands[1]]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, step, limit)) or step <= 0:
            return op  # not a counted loop over integers: no static trip count
        trips = max(0, -(-(limit - start) // step))  # ceil division
        return dataclasses.replace(op, trip_count=trips)
    return op


_DIAGNOSTIC = re.compile(r":(\d+):(\d+): (.*)")
_BOOL_HEX = re.compile(r'dense<"0x([0-9A-Fa-f]*)">(\s*:\s*tensor<((?:\d+x)*)i1>)')


def _bools_byte_per_element(text: str) -> str:
    """Dense i1 constants in hex rewritten to the storage jaxlib's MLIR reads: one byte per element.

    MLIR used to store i1 elements packed, eight to a byte, least significant bit first (LLVM's
    `setBit`); torch-xla 2.9's XLA still writes them so (`dense<"0x...">` of ceil(n / 8) bytes for n
    elements: 128 bytes for a 2x2x16x16 cache mask), and today's MLIR, one byte per element, refuses
    that size. A hex of n bytes is today's form and stays; ceil(n / 8) bytes (n > 1) are unpacked,
    but for one byte 0x00 or 0xFF: a splat in both forms. Any other size is left for MLIR to refuse.
    """

    def unpack(match: re.Match) -> str:
        data = bytes.fromhex(match.group(1)) if len(match.group(1)) % 2 == 0 else None
        n = math.prod(int(d) for d in match.group(3).split("x") if d)
        if (
            data is None
            or n <= 1
            or len(data) == n
            or len(data) != -(-n // 8)
            or (len(data) == 1 and data in (b"\x00", b"\xff"))
        ):
            return match.group(0)
        bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")[:n]
        return f'dense<"0x{bits.tobytes().hex().upper()}">{match.group(2)}'

    return _BOOL_HEX.sub(unpack, text) if "i1>" in text else text


def parse_stablehlo(text: str) -> Module:
    """Parse StableHLO (or MHLO/CHLO-mixed) text into the IR.

    Raises:
        MalformedIR: the text does not parse (the message has MLIR's line and column); brackets,
            regions or calls nest too deep, or calls recurse (`reference.ir.limits`); a function
            is only declared, or has more than one block.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise MalformedIR(f"the text is not valid Unicode: {err.reason} at character {err.start}") from None
    check_text(text)
    text = _bools_byte_per_element(text)
    ctx = make_context()
    reader = _Reader(ctx)
    with ctx:
        try:
            module = reader.ir.Module.parse(text)
        except reader.ir.MLIRError as err:
            match = _DIAGNOSTIC.search(str(err))
            if match:
                line, column = int(match.group(1)), int(match.group(2))
                raise MalformedIR(_printable(match.group(3).strip()), line, column) from None
            lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
            raise MalformedIR(_printable(" ".join(lines[:2]) or "the text does not parse")) from None
        functions = tuple(reader.function(op) for op in module.body.operations if op.operation.name == "func.func")
    if not functions:
        raise MalformedIR("no func.func in the module")
    names = [f.name for f in functions]
    result = Module(functions, "main" if "main" in names else names[0])
    check_calls(result)
    return result
