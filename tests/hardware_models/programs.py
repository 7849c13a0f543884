"""Small StableHLO programs for the pass and cost tests, parsed by the MLIR bindings."""

from __future__ import annotations

from reference.ir import Module, parse_stablehlo
from reference.ir.graph import DotDims, Function, Op, TensorType


def t(shape, dtype="bf16") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if shape else f"tensor<{dtype}>"


def program(args: dict[str, str], body: list[str], result: str, result_type: str) -> Module:
    """func @main(args) { body; return result }."""
    signature = ", ".join(f"%{name}: {typ}" for name, typ in args.items())
    lines = "\n    ".join(body)
    return parse_stablehlo(
        f"func.func @main({signature}) -> {result_type} {{\n    {lines}\n    return {result} : {result_type}\n}}\n"
    )


def linear_gelu(m: int, n: int, k: int, dtype: str = "bf16") -> Module:
    """y = sigmoid-gelu(x @ w + b): a GEMM with a bias and an elementwise epilogue."""
    x, w, b, y = t((m, k), dtype), t((k, n), dtype), t((n,), dtype), t((m, n), dtype)
    return program(
        {"x": x, "w": w, "b": b},
        [
            f"%0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({x}, {w}) -> {y}",
            f"%1 = stablehlo.broadcast_in_dim %b, dims = [1] : ({b}) -> {y}",
            f"%2 = stablehlo.add %0, %1 : {y}",
            f"%3 = stablehlo.logistic %2 : {y}",
            f"%4 = stablehlo.multiply %2, %3 : {y}",
        ],
        "%4",
        y,
    )


def softmax(rows: int, cols: int, dtype: str = "f32") -> Module:
    """Row softmax: max, subtract, exp, sum, divide (two reductions)."""
    x, r = t((rows, cols), dtype), t((rows,), dtype)
    s = t((), dtype)
    return program(
        {"x": x},
        [
            f"%ninf = stablehlo.constant dense<0xFF800000> : {s}",
            f"%zero = stablehlo.constant dense<0.0> : {s}",
            f"%0 = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : ({x}, {s}) -> {r}",
            f"%1 = stablehlo.broadcast_in_dim %0, dims = [0] : ({r}) -> {x}",
            f"%2 = stablehlo.subtract %x, %1 : {x}",
            f"%3 = stablehlo.exponential %2 : {x}",
            f"%4 = stablehlo.reduce(%3 init: %zero) applies stablehlo.add across dimensions = [1] : ({x}, {s}) -> {r}",
            f"%5 = stablehlo.broadcast_in_dim %4, dims = [0] : ({r}) -> {x}",
            f"%6 = stablehlo.divide %3, %5 : {x}",
        ],
        "%6",
        x,
    )


def elementwise(n: int, dtype: str = "f32", op: str = "add") -> Module:
    v = t((n,), dtype)
    return program({"a": v, "b": v}, [f"%0 = stablehlo.{op} %a, %b : {v}"], "%0", v)


def transposing_block(dtype: str = "bf16") -> tuple[Function, TensorType, TensorType]:
    """(block, x, w): func @block(x [64, 128], w [128, 128]) = a GEMM, an exp and a transpose there
    and back (data movement), for a `main` that calls it once per layer."""
    x, w, xt = TensorType((64, 128), dtype), TensorType((128, 128), dtype), TensorType((128, 64), dtype)
    dims = DotDims((), (), (1,), (0,))
    body = Function(
        "block",
        (("%x", x), ("%w", w)),
        (x,),
        (
            Op("stablehlo.dot_general", ("%0",), (x,), ("%x", "%w"), (x, w), attrs=(("dot_dimension_numbers", dims),)),
            Op("stablehlo.exponential", ("%1",), (x,), ("%0",), (x,)),
            Op("stablehlo.transpose", ("%2",), (xt,), ("%1",), (x,), attrs=(("permutation", (1, 0)),)),
            Op("stablehlo.transpose", ("%3",), (x,), ("%2",), (xt,), attrs=(("permutation", (1, 0)),)),
            Op("func.return", (), (), ("%3",), (x,)),
        ),
    )
    return body, x, w
