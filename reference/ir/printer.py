"""Stable, diffable HLO-like text: one op per line with its result types and typed attributes.

    func main(%arg0: f32[4,8] x, %arg1: f32[8,16] w) -> (f32[4,16])
      %0 = dot_general(%arg0, %arg1) -> f32[4,16]  {contracting=[1]x[0]}  # jit(f)/dot_general

Value ids are renumbered per function in order of appearance, so the same program prints the
same text whatever the importer's counters were.
"""

from __future__ import annotations

from reference.ir.graph import ConvDims, DotDims, Function, Module, Op

_SKIP_ATTRS = {"precision_config", "callee", "sym_name", "function_type", "arg_attrs", "res_attrs", "sym_visibility"}


def _fmt_attr(key: str, value) -> str:
    if isinstance(value, DotDims):
        batch = f"batch={list(value.lhs_batch)}x{list(value.rhs_batch)}, " if value.lhs_batch else ""
        return f"{batch}contracting={list(value.lhs_contracting)}x{list(value.rhs_contracting)}"
    if isinstance(value, ConvDims):
        return (
            f"in=[b{value.input_batch},f{value.input_feature},s{list(value.input_spatial)}] "
            f"kernel=[i{value.kernel_input_feature},o{value.kernel_output_feature},s{list(value.kernel_spatial)}]"
        )
    if isinstance(value, tuple) and value and value[0] == "splat":
        return f"{key}={value[1]!r}"
    if isinstance(value, tuple):
        return f"{key}={list(value)}"
    return f"{key}={value}"


class _Names:
    def __init__(self):
        self.names: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, value_id: str, prefix: str = "%") -> str:
        if value_id not in self.names:
            n = self.counts.get(prefix, 0)
            self.names[value_id], self.counts[prefix] = f"{prefix}{n}", n + 1
        return self.names[value_id]


def _op_lines(op: Op, names: _Names, indent: str) -> list[str]:
    results = ", ".join(names(r) for r in op.results)
    lhs = f"{results} = " if results else ""
    operands = ", ".join(names(o) for o in op.operands)
    types = ", ".join(map(str, op.result_types))
    attrs = ", ".join(_fmt_attr(k, v) for k, v in op.attrs if k not in _SKIP_ATTRS)
    name = op.short_name if op.name.startswith("stablehlo.") else op.name
    if op.callee:
        name = f"{name} @{op.callee}"
    if op.trip_count is not None:
        attrs = f"trip_count={op.trip_count}" + (f", {attrs}" if attrs else "")
    tail = f"  {{{attrs}}}" if attrs else ""
    where = op.origin.scope + (
        f" @ {op.origin.source}" if op.origin.source and op.origin.source != op.origin.scope else ""
    )
    scope = f"  # {where}" if where else ""
    unknown = "  [opaque]" if not op.known else ""
    lines = [f"{indent}{lhs}{name}({operands}){' -> ' + types if types else ''}{tail}{unknown}{scope}"]
    for i, region in enumerate(op.regions):
        args = ", ".join(f"{names(a)}: {t}" for a, t in region.args)
        lines.append(f"{indent}  region {i}({args}):")
        for inner in region.ops:
            lines.extend(_op_lines(inner, names, indent + "    "))
    return lines


def print_function(fn: Function) -> str:
    names = _Names()
    args = ", ".join(
        f"{names(a, '%arg')}: {t}" + (f" {n}" if n else "")
        for (a, t), n in zip(fn.args, fn.arg_names or [""] * len(fn.args))
    )
    results = ", ".join(map(str, fn.results))
    lines = [f"func {fn.name}({args}) -> ({results})"]
    for op in fn.ops:
        lines.extend(_op_lines(op, names, "  "))
    return "\n".join(lines)


def print_module(module: Module) -> str:
    """The whole module, entry function first."""
    ordered = sorted(module.functions, key=lambda f: f.name != module.entry)
    return "\n\n".join(print_function(f) for f in ordered) + "\n"
