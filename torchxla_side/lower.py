"""Lowering through torch-xla, from the main venv: a request to the driver in .venv-torchxla
(a subprocess), its StableHLO text read into the IR by the same bindings as the other two paths.

The driver's function takes the module's weights, buffers and inputs in the order torch-xla chose
(weights and inputs interleaved); the IR's entry function is given them as the other paths have
them, weights (in the module's order), then buffers, then inputs, by permuting its signature
(the ops, which name values, are unchanged). torch-xla's StableHLO carries no source locations,
so an op's provenance is its function and position only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from reference.errors import LoweringFailed, PathUnavailable
from reference.ir import parse_stablehlo, verify
from reference.ir.graph import Module
from reference.lowering import Lowering
from torchxla_side.driver import JOB_MARK  # the driver's line on stderr before each job (stdlib imports only)

SIDE = "torch-xla"
ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-torchxla"
# One request's limit: importing torch-xla takes about 5 s, a 70B layer's export under 20 s here;
# a request of every catalogue entry's numerics about two minutes on 2 cores.
DRIVER_TIMEOUT_S = 900


def venv_python() -> Path:
    return VENV / "bin" / "python"


def available() -> bool:
    """Whether .venv-torchxla is built (its stamp is written last, after torch-xla installed)."""
    return venv_python().exists() and (VENV / ".installed-stamp").exists()


def unavailable_reason() -> str:
    return f"the torch-xla path needs its own venv ({VENV.name}, torch 2.9 + torch-xla 2.9): run `make torch-xla`"


def call_driver(jobs: list[dict], timeout_s: float = DRIVER_TIMEOUT_S) -> tuple[list[dict], float]:
    """Run jobs in one driver process; (one result per job, wall seconds).

    Raises:
        PathUnavailable: the venv is not built.
        LoweringFailed: the driver did not answer (it crashed, or ran past timeout_s).
    """
    if not available():
        raise PathUnavailable(unavailable_reason())
    with tempfile.TemporaryDirectory(prefix="landscape-torchxla-") as tmp:
        request = Path(tmp) / "request.json"
        request.write_text(json.dumps({"jobs": jobs}))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])),
            "PJRT_DEVICE": "CPU",
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "GRPC_VERBOSITY": "ERROR",
        }
        env.pop("XLA_FLAGS", None)  # the main process's flags (its emulated devices) are not the driver's
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [str(venv_python()), "-m", "torchxla_side.driver", str(request)],
                capture_output=True,
                text=True,
                env=env,
                cwd=str(ROOT),
                timeout=timeout_s,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise LoweringFailed(f"torch-xla: the driver ran past {timeout_s:.0f} s") from None
        wall = time.perf_counter() - start
        answer = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        try:
            return json.loads(answer)["results"], wall
        except (json.JSONDecodeError, KeyError):
            lines = done.stderr.strip().splitlines() or ["no output"]
            started = [
                int(ln[len(JOB_MARK) :]) for ln in lines if ln.startswith(JOB_MARK) and ln[len(JOB_MARK) :].isdigit()
            ]
            job = jobs[started[-1]] if started else {}
            where = f" in {job.get('name')} ({job.get('part') or job.get('kind')}, {job.get('dtype')})" if job else ""
            raise LoweringFailed(f"torch-xla: the driver failed{where} (exit {done.returncode}): {lines[-1]}") from None


def reorder_arguments(
    module: Module, args: list[dict], parameters: list[str], buffers: list[str]
) -> tuple[Module, list[int], int, int]:
    """The entry function's signature as weights, buffers, inputs: (module, the position in
    torch-xla's order of each argument in ours, weights, weights and buffers)."""
    main = module.main
    if len(main.args) != len(args):
        raise LoweringFailed(f"torch-xla: @{main.name} has {len(main.args)} arguments, its metadata names {len(args)}")
    rank = {n: i for i, n in enumerate(parameters)} | {n: len(parameters) + i for i, n in enumerate(buffers)}
    kinds = {"parameter": 0, "buffer": 1, "constant": 1, "input": 2}
    order = sorted(range(len(args)), key=lambda i: (kinds[args[i]["kind"]], rank.get(args[i]["name"], len(rank)), i))
    n_params = sum(1 for a in args if a["kind"] == "parameter")
    n_state = sum(1 for a in args if a["kind"] != "input")
    fn = dataclasses.replace(
        main, args=tuple(main.args[i] for i in order), arg_names=tuple(args[i]["name"] for i in order)
    )
    functions = tuple(fn if f.name == main.name else f for f in module.functions)
    return dataclasses.replace(module, functions=functions), order, n_params, n_state


def _lowerings(name: str, jobs: list[dict]) -> list[Lowering]:
    """Each lower job's Lowering (the driver's StableHLO, in our IR)."""
    with tempfile.TemporaryDirectory(prefix="landscape-torchxla-") as tmp:
        for i, job in enumerate(jobs):
            job["out"] = str(Path(tmp) / f"part{i}.mlir")
            if job.get("xla"):
                job["xla_dump"] = str(Path(tmp) / "xla")
        results, wall = call_driver(jobs)
        out = []
        for job, result in zip(jobs, results):
            label = f"{name}.{job['part']}" if job.get("part") else name
            if not result.get("ok"):
                raise LoweringFailed(f"{label}: torch-xla lowering failed: {result.get('error', 'no answer')}")
            text = Path(job["out"]).read_text()
            module, _, n_params, n_state = reorder_arguments(
                parse_stablehlo(text), result["args"], result["parameters"], result["buffers"]
            )
            notes = (
                *result["notes"],
                f"lowered by torch-xla in a subprocess ({wall:.1f} s with its start; peak memory there "
                f"{result['peak_rss_bytes'] / 1e9:.2f} GB)",
            )
            stages = {"stablehlo": text, **({"xla": result["xla"]} if "xla" in result else {})}
            out.append(
                Lowering(
                    SIDE,
                    label,
                    stages,
                    verify(module),
                    tuple(range(n_params)),
                    buffer_args=tuple(range(n_params, n_state)),
                    notes=notes,
                )
            )
        return out


def lower_entry(name: str, shapes: dict, dtype: str, compile_xla: bool = False) -> Lowering:
    """A catalogue entry's PyTorch module through torch-xla (resolved shapes); with compile_xla,
    also the "xla" stage: torch-xla's own optimized HLO, from running the module lazily on XLA's
    CPU device (the graph its sync compiles, as XLA dumps it after optimization)."""
    job = {"kind": "lower", "name": name, "shapes": shapes, "dtype": dtype, "part": None, "xla": compile_xla}
    return _lowerings(name, [job])[0]


PARTS = ("prologue", "block", "epilogue")


def lower_regional(name: str, shapes: dict, dtype: str) -> Lowering:
    """A decoder as prologue + one block x layers + epilogue, as the other paths lower it: three
    exports in one driver process, one layer's weights materialized at most."""
    return lower_regional_many(name, [shapes], dtype)[0]


def lower_regional_many(name: str, shapes_list: list[dict], dtype: str) -> list[Lowering]:
    """lower_regional at several shapes (a prefill and its decode steps) in one driver process."""
    from reference.ir.compose import compose_regional
    from reference.regional import regional_plan

    jobs = [
        {"kind": "lower", "name": name, "shapes": shapes, "dtype": dtype, "part": p}
        for shapes in shapes_list
        for p in PARTS
    ]
    lowered = _lowerings(name, jobs)
    out = []
    for i, shapes in enumerate(shapes_list):
        plan, parts = regional_plan(name, shapes), lowered[len(PARTS) * i : len(PARTS) * (i + 1)]
        module, params, buffers = compose_regional(
            *(p.module for p in parts),
            plan.layers,
            tuple(len(p.param_args) for p in parts),
            int(plan.cfg.tie_embeddings),
            n_state=tuple(p.state_args for p in parts),
        )
        stages = {"stablehlo": "\n".join(f"// ---- {p.name}\n{p.stages['stablehlo']}" for p in parts)}
        out.append(
            dataclasses.replace(
                parts[1], name=name, stages=stages, module=verify(module), param_args=params, buffer_args=buffers
            )
        )
    return out
