"""What one eager PyTorch call runs on the host CPU: its ATen ops from the profiler's op tree, as
`FrameworkOp`s the host runtime model costs, and the module forwards it calls (host_validate.py and
host_measure.py read both)."""

from __future__ import annotations

import contextlib
import os
import sys


def module_reads(module, inputs) -> tuple[int, int]:
    """(nn.Module forwards one call runs, parameters those forwards read): counted by hooks on
    one call, so an MoE's experts that routing leaves idle count for nothing (each forward reads
    its module's own parameters)."""
    calls = [0, 0]

    def count(m, args):
        calls[0] += 1
        calls[1] += sum(1 for _ in m.parameters(recurse=False))

    handles = [m.register_forward_pre_hook(count) for m in module.modules()]
    try:
        module(*inputs)
    finally:
        for h in handles:
            h.remove()
    return calls[0], calls[1]


# ATen ops a GEMM library runs.
CONTRACTIONS = ("mm", "addmm", "bmm", "baddbmm", "convolution", "_scaled_dot_product_flash_attention_for_cpu")
# ATen ops that take one transcendental per output element, and the function whose rate each runs
# at (hardware_models/families/cpu/cost.py: gelu and silu are ATen kernels of their own; a softmax is exp's).
TRANSCENDENTAL = {
    "exp": "exponential",
    "log": "log",
    "sin": "sine",
    "cos": "cosine",
    "tanh": "tanh",
    "erf": "erf",
    "erfc": "erfc",
    "sigmoid": "logistic",
    "silu": "silu",
    "gelu": "gelu",
    "rsqrt": "rsqrt",
    "sqrt": "sqrt",
    "_softmax": "softmax",
    "_log_softmax": "softmax",  # not pow: ATen squares with a multiply
    "native_layer_norm": "layer_norm",
}  # an ATen kernel of its own (moments, then the scaling), its own row
# ATen reductions: each reads its input once at the reduction rate (families/cpu/cost.py reduce_rate), in place of FLOPs.
REDUCTIONS = (
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "prod",
    "norm",
    "linalg_vector_norm",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "logsumexp",
    "argmax",
    "argmin",
    "all",
    "any",
)
# Ops that read only the rows their indices name (the table is not streamed), and ops that write
# into their first argument (no new output).
GATHERS = ("embedding", "index_select", "gather", "index")
# Bookkeeping the dispatcher answers without a kernel: not counted, no work.
BOOKKEEPING = (
    "result_type",
    "resolve_conj",
    "resolve_neg",
    "empty",
    "empty_strided",
    "empty_like",
    "detach",
    "alias",
    "lift_fresh",
    "_has_compatible_shallow_copy_type",
    "is_nonzero",
    "item",
    "_local_scalar_dense",
)
VIEWS = (
    "view",
    "_unsafe_view",
    "reshape",
    "transpose",
    "t",
    "permute",
    "as_strided",
    "expand",
    "slice",
    "select",
    "unsqueeze",
    "squeeze",
    "narrow",
    "chunk",
    "split",
    "split_with_sizes",
    "unbind",
    "contiguous",
    "to",
    "type_as",
)


def _flops(name: str, shapes: list[tuple], out: int) -> int:
    import math

    if name in ("mm", "bmm"):
        return 2 * math.prod(shapes[0]) * shapes[1][-1]
    if name in ("addmm", "baddbmm"):
        return 2 * math.prod(shapes[1]) * shapes[2][-1]
    if name == "convolution":
        return 2 * out * math.prod(shapes[1][1:])
    if "scaled_dot_product" in name:
        q, k = shapes[0], shapes[1]
        return 4 * math.prod(q[:-1]) * k[-2] * q[-1]
    return out


@contextlib.contextmanager
def _quiet_stderr():
    """Kineto prints a line on file descriptor 2 when the profiler starts and stops: not ours to show."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def trace_eager(module, inputs, element_bytes: int = 4) -> list:
    """The ATen ops one eager call runs, nested ones included, from the profiler's op tree (its
    shapes, not its timings), as `FrameworkOp`s. An op called from Python is a top-level
    dispatch, one called by another op's C++ a nested one; only a leaf (no op below it) does
    work (a GEMM always: a bias copied below it is its own op): its inputs' bytes plus one
    output the size of its largest input (a GEMM's: m x n),
    FLOPs from the shapes. Bookkeeping ops are left out; views and `to` without a copy below
    them move nothing."""
    import math

    import torch

    from hardware_models.families.cpu.runtime import FrameworkOp

    with _quiet_stderr(), torch.profiler.profile(record_shapes=True) as prof:
        module(*inputs)
    ops = []
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        name = event.name.removeprefix("aten::")
        if name in BOOKKEEPING:
            continue
        parent = event.cpu_parent
        nested = parent is not None and parent.name.startswith("aten::")
        children = [
            c
            for c in event.cpu_children
            if c.name.startswith("aten::") and c.name.removeprefix("aten::") not in (*BOOKKEEPING, *VIEWS)
        ]
        shapes = [tuple(s) for s in event.input_shapes if isinstance(s, (list, tuple)) and s]
        moved = flops = trans = out = reduced = depth = rhs = 0
        batch, mnk = 1, ()
        if (name in CONTRACTIONS or not children) and name not in VIEWS and shapes:
            sizes = [math.prod(s) for s in shapes]
            out = shapes[0][0] * shapes[1][-1] if name == "mm" else max(sizes)
            if name in ("bmm", "baddbmm", "addmm"):
                a, b = shapes[-2], shapes[-1]
                out = math.prod(a[:-1]) * b[-1]
            if name in GATHERS:  # indices, the rows they pick, and the output
                table, index = shapes[0], shapes[-1]
                out = math.prod(index) * (math.prod(table[1:]) if name in ("embedding", "index_select") else 1)
                moved = (math.prod(index) + 2 * out) * element_bytes
            elif name.endswith("_"):  # in place: reads its inputs, writes the first
                moved = sum(sizes) * element_bytes
            else:
                moved = (sum(sizes) + out) * element_bytes
            flops = _flops(name, shapes, out)
            trans = out if name in TRANSCENDENTAL else 0
            if name in REDUCTIONS:
                flops, reduced = 0, sizes[0]
            if name in ("bmm", "baddbmm"):
                batch = shapes[-2][0]
            if name in ("mm", "addmm", "bmm", "baddbmm") and len(shapes[-2]) >= 2 and len(shapes[-1]) >= 2:
                mnk = (shapes[-2][-2], shapes[-1][-1], shapes[-2][-1])  # A [.., m, k] @ B [.., k, n]
            if name in ("mm", "addmm"):  # a linear layer's weight, as the library reads it
                rhs = math.prod(shapes[-1]) * element_bytes
            elif name == "convolution":  # input [N, C, H, W], weight [O, C/groups, kh, kw]
                batch, depth = shapes[0][0], math.prod(shapes[1][1:])
            elif "scaled_dot_product" in name:
                batch = math.prod(shapes[0][:-2])
        rows = math.prod(shapes[0][:-1]) if "scaled_dot_product" in name and name in CONTRACTIONS and shapes else 0
        ops.append(
            FrameworkOp(
                name,
                moved,
                flops,
                trans,
                name in CONTRACTIONS,
                "f32",
                nested,
                out if moved else 0,
                TRANSCENDENTAL.get(name, "exponential"),
                reduced=reduced,
                batch=batch,
                rows=rows,
                rhs_bytes=rhs,
                depth=depth,
                mnk=mnk,
            )
        )
    return ops
