"""Numerics on the torch-xla path: catalogue cases run by the driver on XLA's CPU device, many in
one subprocess (torch-xla's import is paid once). The module is the catalogue's PyTorch module
with the case's weights; its outputs come back as float64, like the other sides'."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from reference.errors import LoweringFailed
from reference.inputs import Case
from torchxla_side.lower import call_driver


def _float32(array: np.ndarray) -> np.ndarray:
    """bfloat16 and float16 widened to float32 (exactly) for the npz file; integers unchanged."""
    return array if array.dtype.kind in "iub" else array.astype(np.float32)


def run_cases(cases: list[Case], strict: bool = True) -> list:
    """Each case's outputs (float64), in order, from one driver process; with strict=False a case
    that failed on torch-xla gives its LoweringFailed in its place, and the others still count.

    Raises:
        PathUnavailable: the venv is not built.
        LoweringFailed: a case failed on torch-xla (named; strict only), or the driver did not answer.
    """
    with tempfile.TemporaryDirectory(prefix="landscape-torchxla-") as tmp:
        jobs = []
        for i, case in enumerate(cases):
            arrays = Path(tmp) / f"in{i}.npz"
            np.savez(
                arrays,
                **{f"w:{k}": _float32(v) for k, v in case.weights.items()},
                **{f"x:{k}": _float32(v) for k, v in case.inputs.items()},
            )
            jobs.append(
                {
                    "kind": "run",
                    "name": case.entry.name,
                    "shapes": dict(case.shapes),
                    "dtype": case.dtype,
                    "inputs": list(case.inputs),
                    "arrays": str(arrays),
                    "out": str(Path(tmp) / f"out{i}.npz"),
                }
            )
        results, _ = call_driver(jobs)
        outputs = []
        for case, job, result in zip(cases, jobs, results):
            if not result.get("ok"):
                failure = LoweringFailed(
                    f"{case.entry.name} ({case.dtype}): torch-xla run failed: {result.get('error')}"
                )
                if strict:
                    raise failure
                outputs.append(failure)
                continue
            with np.load(job["out"]) as out:
                outputs.append(tuple(out[f"o{i}"].astype(np.float64) for i in range(len(out.files))))
        return outputs


def run_case(case: Case) -> tuple[np.ndarray, ...]:
    """One case on torch-xla (a runner for reference.agreement.check_agreement; a subprocess each)."""
    return run_cases([case])[0]


def ladder_case(case: Case, fresh: Case, fault: str | None = None, second: dict | None = None) -> dict:
    """The debugger's R1 and R2 on torch-xla, in one driver process (landscape.debug): the case's
    module (or the course's buggy one, `fault`) run lazily on XLA's device on the case's inputs
    ("r1") and on `fresh`'s ("eager_fresh"); torch.export's capture, and torch_xla.stablehlo's
    program of it run on the device on `fresh`'s inputs ("r2"); that program as a Lowering, with its
    arguments ("arguments": weights, buffers, then the case's inputs) for the rungs below; the
    graph's ops, and at `second`'s shapes the ops captured again. A capture failure answers
    "r1", "eager_fresh" and "capture" (the CaptureFailed) only.

    Raises:
        PathUnavailable: the venv is not built.
        LoweringFailed: the driver failed on the case (named) or did not answer.
    """
    from reference.errors import CaptureFailed
    from reference.ir import parse_stablehlo, verify
    from reference.lowering import Lowering
    from torchxla_side.lower import SIDE, reorder_arguments

    with tempfile.TemporaryDirectory(prefix="landscape-torchxla-") as tmp:
        arrays, out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(
            arrays,
            **{f"w:{k}": _float32(v) for k, v in case.weights.items()},
            **{f"x:{k}": _float32(v) for k, v in case.inputs.items()},
            **{f"f:{k}": _float32(v) for k, v in fresh.inputs.items()},
        )
        job = {
            "kind": "ladder",
            "name": case.entry.name,
            "shapes": dict(case.shapes),
            "dtype": case.dtype,
            "fault": fault,
            "inputs": list(case.inputs),
            "arrays": str(arrays),
            "second": second,
            "out": str(out),
        }
        (result,), _ = call_driver([job])
        if not result.get("ok"):
            raise LoweringFailed(f"{case.entry.name} ({case.dtype}): torch-xla failed: {result.get('error')}")
        with np.load(out) as saved:
            values = {k: saved[k] for k in saved.files}
    outs = lambda prefix: tuple(
        values[f"{prefix}:{i}"].astype(np.float64)  # noqa: E731
        for i in range(sum(1 for k in values if k.startswith(prefix + ":")))
    )
    if "capture" in result:
        c = result["capture"]
        return {
            "r1": outs("r1"),
            "eager_fresh": outs("e"),
            "capture": CaptureFailed(c["message"], c["file"], c["line"], c["cause"]),
        }
    module, order, n_params, n_state = reorder_arguments(
        parse_stablehlo(result["stablehlo"]), result["args"], result["parameters"], result["buffers"]
    )
    lowering = Lowering(
        SIDE,
        case.entry.name,
        {"stablehlo": result["stablehlo"]},
        verify(module),
        tuple(range(n_params)),
        buffer_args=tuple(range(n_params, n_state)),
    )
    dtypes = [t.dtype for _, t in module.main.args]
    state = [_narrowed(values[f"a:{i}"], dtypes[j]) for j, i in enumerate(order[:n_state])]
    return {
        "r1": outs("r1"),
        "eager_fresh": outs("e"),
        "r2": outs("r2"),
        "lowering": lowering,
        "arguments": [*state, *case.inputs.values()],
        "ops": [tuple(o) for o in result["ops"]],
        "second_ops": [tuple(o) for o in result["second_ops"]] if result["second_ops"] is not None else None,
    }


def _narrowed(array: np.ndarray, element: str) -> np.ndarray:
    """A state value (stored widened to float32) back in its argument's type."""
    from reference.ir.interpret import numpy_type

    return array.astype(numpy_type(element)) if array.dtype.kind == "f" else array
