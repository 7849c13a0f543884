"""Small StableHLO programs for the pass and cost tests, parsed by the MLIR bindings."""

from __future__ import annotations

from reference.ir import Module, parse_stablehlo


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
        "%4", y,
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
        "%6", x,
    )


def elementwise(n: int, dtype: str = "f32", op: str = "add") -> Module:
    v = t((n,), dtype)
    return program({"a": v, "b": v}, [f"%0 = stablehlo.{op} %a, %b : {v}"], "%0", v)
