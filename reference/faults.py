"""The debugger's fault taxonomy and its plantable faults, as data.

Eight layers, from the user's code down to the device's arithmetic. Each names its typical
symptom, the executable reference at its boundary (what a result is checked against), the rung
of the ladder that checks it, and the stage of the published studies of deep-learning-compiler
bugs it falls in (Shen et al., "A comprehensive study of deep learning compiler bugs", FSE 2021:
model loading, high-level IR transformation, low-level IR transformation; its other stage,
"high-level IR construction", covers capture).

A fault is planted by name (`landscape debug --inject NAME`, or `inject=` in the Python API):
the rung that owns it switches one decision to the wrong one. Framework faults swap the
module for the course's buggy one (pytorch_side/faults.py, jax_side/faults.py); the
decomposition fault rewrites ops as the interpreter runs them (`decomposition_hook`); the rest
are switches of the plan executor (hardware_models/execute_plan.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reference.errors import UnknownName
from reference.ir.graph import Op


@dataclass(frozen=True)
class Layer:
    number: int
    name: str
    symptom: str
    reference: str  # the executable reference at the layer's boundary
    rung: str  # the rung that checks it
    study_stage: str  # Shen et al. FSE 2021


LAYERS = (
    Layer(
        1,
        "framework code",
        "wrong or non-finite values in eager mode: an overflow, a missing max, a host sync",
        "R0, the float64 reference of the spec",
        "R1",
        "model loading (the model as written)",
    ),
    Layer(
        2,
        "graph capture",
        "capture fails, breaks the graph, or bakes a traced value or shape into the graph",
        "R1, the eager framework on the same inputs",
        "R2",
        "high-level IR construction",
    ),
    Layer(
        3,
        "decomposition",
        "a composite op rewritten into primitives that compute something else",
        "R2, the captured graph replayed",
        "R3",
        "high-level IR transformation",
    ),
    Layer(
        4,
        "graph optimization",
        "a fused, folded or quantized graph that no longer computes the same function",
        "R3, the lowered IR interpreted",
        "R4",
        "high-level IR transformation",
    ),
    Layer(
        5,
        "lowering and layout",
        "elements lost or misplaced at a layout's edge: sticks, vectors, padding",
        "R4, the IR after the target's graph passes",
        "R5",
        "low-level IR transformation",
    ),
    Layer(
        6,
        "tiling and scheduling",
        "a tile or a cycle missing or out of order: remainders, early consumers",
        "R4 (tiles) or R5 (schedules)",
        "R5/R6",
        "low-level IR transformation",
    ),
    Layer(
        7,
        "memory placement and data movement",
        "values overwritten while live, transfers of the wrong length",
        "R5, the plan with its layouts and tiles",
        "R6",
        "low-level IR transformation (code generation)",
    ),
    Layer(
        8,
        "numerics",
        "errors beyond the dtype's rounding: narrow accumulation, the wrong format",
        "R6, the scheduled plan in the program's own types",
        "R7",
        "low-level IR transformation (code generation)",
    ),
)
RUNG_NAMES = {
    "R0": "the float64 reference",
    "R1": "the eager framework",
    "R2": "the captured graph, replayed",
    "R3": "the lowered IR, interpreted",
    "R4": "the IR after the target's graph passes",
    "R5": "the plan with its padded layouts and tiles",
    "R6": "the scheduled plan with its memory planner and DMA",
    "R7": "the device's numerics",
}
RUNGS = tuple(RUNG_NAMES)


@dataclass(frozen=True)
class Fault:
    """A plantable fault.

    Attributes:
        name: what --inject takes.
        layer: its layer's number in LAYERS.
        rung: the rung whose decision it breaks.
        families: the target families it can be planted on (() = every family).
        description: what goes wrong, in one line.
        shows_on: a program it shows on, as `landscape debug` arguments.
        input_scale: the inputs scaled by this (a framework bug that only large or small inputs
            show, as in the course's lab); 1 for the rest.
    """

    name: str
    layer: int
    rung: str
    families: tuple[str, ...]
    description: str
    shows_on: str
    input_scale: float = 1.0

    @property
    def layer_record(self) -> Layer:
        return LAYERS[self.layer - 1]


FAULTS = (
    Fault(
        "softmax-no-max",
        1,
        "R1",
        (),
        "softmax computed as exp(x) / sum(exp(x)), without subtracting the max: large logits overflow",
        "softmax --dtype float16",
        input_scale=16.0,
    ),
    Fault(
        "host-sync",
        2,
        "R2",
        (),
        "forward calls .item() to branch on a tensor's value: a host sync that no graph capture can follow",
        "softmax",
    ),
    Fault(
        "shape-branch",
        2,
        "R2",
        (),
        "forward branches on an input's shape (a vectorized max when the row length "
        "is a multiple of 8): the capture keeps the branch taken at the captured shape only",
        "softmax",
    ),
    Fault(
        "layernorm-eps-outside-sqrt",
        3,
        "R3",
        (),
        "LayerNorm/RMSNorm decomposed as 1 / (sqrt(var) + eps) instead of rsqrt(var + eps)",
        "layernorm",
        input_scale=0.01,
    ),
    Fault(
        "fused-reduce-wrong-axis",
        4,
        "R4",
        ("gpu", "tpu", "spyre", "wafer"),
        "a reduction fused with its neighbours runs over another axis of the same extent",
        "softmax",
    ),
    Fault(
        "floor-stick-count",
        5,
        "R5",
        ("spyre", "lpu"),
        "a copy's stick (vector) count recomputed with floor division: the last partial stick is never written",
        "clone --shape n=65 --dtype float16 --target spyre",
    ),
    Fault(
        "drop-remainder-tile",
        6,
        "R5",
        ("gpu", "tpu", "spyre"),
        "a contraction's tile count computed as "
        "M // tile_m (N // tile_n): the remainder rows (columns) are never computed",
        "matmul --shape m=130 --shape n=130",
    ),
    Fault(
        "early-consumer",
        6,
        "R6",
        ("lpu",),
        "on the static schedule, a consumer issued one cycle before its producer writes: it reads a stale SRAM slot",
        "softmax --target groq-lpu",
    ),
    Fault(
        "free-at-first-use",
        7,
        "R6",
        ("lpu",),
        "the SRAM planner frees a value at its first reader instead of "
        "its last: a later value overwrites it while live",
        "layernorm --target groq-lpu",
    ),
    Fault(
        "dma-length-elements",
        7,
        "R6",
        (),
        "an argument's DMA length given in elements where the engine "
        "counts bytes: only the first 1/itemsize of it arrives",
        "matmul",
    ),
    Fault("fp16-accumulate", 8, "R7", (), "a GEMM accumulating in fp16 instead of f32", "matmul --shape k=1024"),
)
FAULT_NAMES = tuple(f.name for f in FAULTS)


def get_fault(name: str) -> Fault:
    """Raises UnknownName (with the valid names) for a fault that is not in FAULTS."""
    for fault in FAULTS:
        if fault.name == name:
            return fault
    raise UnknownName("fault", name, FAULT_NAMES)


def decomposition_hook(module, steps=None):
    """The R3 fault layernorm-eps-outside-sqrt as an interpreter hook: every `rsqrt(add(v, eps))`
    with a splat eps computes 1 / (sqrt(v) + eps). Returns (hook, sites): `sites` fills with the
    qualified ops it rewrote; `steps` limits it to those ops (bisection). Only main's ops and
    inlined calls are matched by name; the producer of an operand is looked up in the function
    the op belongs to."""
    producers: dict[str, Op] = {}
    for fn in module.functions:
        for op in fn.ops:
            for r in op.results:
                producers[(fn.name, r)] = op

    def splat_of(fn: str, value: str):
        """The scalar a value holds, followed through broadcasts, reshapes and converts of a splat."""
        for _ in range(16):
            op = producers.get((fn, value))
            if op is None:
                return None
            if op.splat is not None:
                return op.splat
            if op.short_name not in ("broadcast_in_dim", "broadcast", "reshape", "convert") or len(op.operands) != 1:
                return None
            value = op.operands[0]
        return None

    seen: dict[str, np.ndarray] = {}
    sites: list[str] = []

    def function_of(key: str) -> str:
        instance = key.split("%", 1)[0]
        return instance.rsplit(":", 1)[-1] if ":" in instance else "main"

    def hook(key, op, operands):
        fn = function_of(key)
        prefix = key.split("%", 1)[0]
        if op.short_name == "add":  # keep an add's operands: the variance an rsqrt's add read
            seen.update((f"{prefix}{v}", x) for v, x in zip(op.operands, operands))
        if op.short_name == "rsqrt":
            add = producers.get((fn, op.operands[0]))
            if add is not None and add.short_name == "add":
                eps = [splat_of(fn, v) for v in add.operands]
                other = [v for v, e in zip(add.operands, eps) if e is None]
                if len(other) == 1 and any(e is not None for e in eps) and (steps is None or key in steps):
                    var = seen.get(f"{prefix}{other[0]}")
                    if var is not None:
                        sites.append(key)
                        e = next(e for e in eps if e is not None)
                        wide = var.astype(np.float64 if var.dtype == np.float64 else np.float32)
                        return (1 / (np.sqrt(wide) + e),)
        return None

    return hook, sites
