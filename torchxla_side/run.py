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
            np.savez(arrays, **{f"w:{k}": _float32(v) for k, v in case.weights.items()},
                     **{f"x:{k}": _float32(v) for k, v in case.inputs.items()})
            jobs.append({"kind": "run", "name": case.entry.name, "shapes": dict(case.shapes), "dtype": case.dtype,
                         "inputs": list(case.inputs), "arrays": str(arrays), "out": str(Path(tmp) / f"out{i}.npz")})
        results, _ = call_driver(jobs)
        outputs = []
        for case, job, result in zip(cases, jobs, results):
            if not result.get("ok"):
                failure = LoweringFailed(f"{case.entry.name} ({case.dtype}): torch-xla run failed: {result.get('error')}")
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
