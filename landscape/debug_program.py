"""The program `landscape debug` runs down its ladder: a lowering, its arguments and its float64
reference outputs, from a catalogue entry or a StableHLO file (with FILE.npz beside it), and the
check that the traces the ladder keeps fit in memory."""

from __future__ import annotations

import dataclasses
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FLOAT_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}


# -- the program
@dataclass
class Program:
    """What the ladder runs: the lowering, its arguments, and the float64 reference outputs."""

    name: str
    side: str
    dtype: str
    lowering: object
    args: list
    reference: tuple
    out_perm: tuple | None = None
    case: object = None
    captured: object = None
    reduction: int = 0


def scaled(case, scale: float):
    if scale == 1.0:
        return case
    inputs = {
        k: (v.astype(np.float64) * scale).astype(v.dtype) if v.dtype.kind != "i" else v for k, v in case.inputs.items()
    }
    return dataclasses.replace(case, inputs=inputs)


def program_dtype(module) -> str:
    types = [t.dtype for _, t in module.main.args] + [t.dtype for t in module.main.results]
    for element in ("f16", "bf16", "f32"):
        if element in types:
            return FLOAT_NAMES[element]
    return "float32"  # an f64 or integer program: judged at float32's tolerance, the widest the table has


def program_from_file(path: str, seed: int = 0) -> Program:
    """A StableHLO file as the ladder's program: its arguments from FILE.npz beside it (arg0, arg1,
    ...) when there, else drawn from `seed`; R0 is the program run with every float widened to f64.

    Raises:
        MalformedInput: an npz that cannot be read, lacks an argument, or holds one of the wrong
            shape or kind; a program too large to keep every op's values (check_trace_memory).
    """
    from landscape.lowering import lowering_from_file
    from reference.errors import MalformedInput
    from reference.ir.interpret import run_module, seeded_arguments, widened

    lowering = lowering_from_file(path)
    main = lowering.module.main
    check_trace_memory(lowering.module, path)
    stored = Path(path).with_suffix(".npz")
    if stored.is_file():
        try:  # a truncated or corrupt archive fails in zipfile or zlib, at opening or at reading one array
            with stored.open("rb") as f, np.load(f, allow_pickle=False) as data:  # f: closed even when np.load fails
                names = set(data.files)
                args = [data[f"arg{i}"] for i in range(len(main.args)) if f"arg{i}" in names]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
            raise MalformedInput(
                f"{stored}: not a readable .npz of plain arrays ({type(err).__name__}: {err})"
            ) from None
        missing = [f"arg{i}" for i in range(len(main.args)) if f"arg{i}" not in names]
        if missing:
            raise MalformedInput(
                f"{stored}: no array {', '.join(missing)}; it needs arg0..arg{len(main.args) - 1}, "
                f"one per argument of @main"
            )
        for i, (a, (name, t)) in enumerate(zip(args, main.args)):
            if tuple(a.shape) != t.shape or a.dtype.kind not in "biuf":
                raise MalformedInput(f"{stored}: arg{i} is {a.dtype}{list(a.shape)}; {name} of @main is {t}")
    else:
        args = seeded_arguments(lowering.module, seed)
    reference = tuple(np.asarray(o, np.float64) for o in run_module(widened(lowering.module), args))
    return Program(lowering.name, "file", program_dtype(lowering.module), lowering, args, reference)


# The traces the ladder holds at once (the clean and faulted R3, the rung below, the rung, a forced run).
TRACES_HELD = 5


def check_trace_memory(module, label: str) -> int:
    """The bytes of one trace (every op's results, each call instance once per call site), refused
    when the traces the ladder holds exceed half the memory available now.

    Raises:
        TooLargeToRun: with the estimate and what is available.
    """
    from reference.agreement import available_memory_bytes
    from reference.errors import MalformedInput
    from reference.units import format_bytes

    def walk(fn_name: str, depth: int = 0) -> int:
        total = 0
        for op in module.function(fn_name).ops:
            total += sum(t.nbytes for t in op.result_types)
            if op.short_name == "call" and op.callee and depth < 16:
                total += walk(op.callee, depth + 1)
            for region in op.regions:
                total += sum(sum(t.nbytes for t in o.result_types) for o in region.ops)
        return total

    one = walk(module.entry) + sum(t.nbytes for _, t in module.main.args)
    available = available_memory_bytes()
    if available is not None and TRACES_HELD * one > available // 2:
        raise MalformedInput(
            f"{label}: debugging keeps every op's values for op-by-op comparison, about "
            f"{format_bytes(TRACES_HELD * one)}, more than half the {format_bytes(available)} available now; "
            "choose smaller shapes (--shape)"
        )
    return one
