"""`landscape debug`: run a program down the ladder of executors, R0 to R7, and find the first
rung whose result departs from the reference; inside it, the op where the fault originates,
where it shows, and whether it reaches the output.

The ladder (reference.faults.RUNG_NAMES): R0 the float64 reference; R1 the eager framework; R2
the captured graph replayed on fresh inputs; R3 the lowered IR interpreted (reference.ir.
interpret); R4 to R7 the target's compiled plan executed (hardware_models.execute_plan).

First divergence:
    1. Every rung's outputs are compared with R0's against the dtype's tolerance (reference.
       tolerance; R7 against the narrowest type the target runs the program as: its arithmetic
       legitimately changes). From R3 on, every op is also compared with the rung below, so a
       fault the output hides (a softmax's argmax) is still found.
    2. In the first divergent rung, a teacher-forced run (each op's inputs taken from the rung
       below) names the op where the fault originates; the free-running run names the ops where
       it shows, and whether it reaches the output.
    3. The rung's sub-steps (the ops where its own behaviour runs) are bisected to the first bad
       one, as PyTorch's compiler bisector bisects passes.
    4. The repro: the program's StableHLO and its arguments (.npz), which `landscape debug
       --from-file` runs again; where the origin is an op of main, also the program shrunk to
       end at that op (reference.ir.shrink).
A divergence in R1 is located in the lowered program by teacher-forcing it in its own dtype
against its float64 twin; a capture failure (R2) names the user's line, and so does a capture
that holds one branch of a shape-dependent `if` (the graph captured again at a second shape,
second_shapes, has other ops: _recapture).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path

import numpy as np

from landscape.debug_findings import (  # noqa: F401  (the API: debug, and what it returns and prints)
    Finding,
    OpSite,
    Rung,
    differing_ops,
    gate,
    list_faults,
    measure,
    op_differs,
    render,
)
from landscape.debug_program import FLOAT_NAMES, Program, check_trace_memory, program_from_file, scaled
from landscape.outputs import write_file
from reference.faults import get_fault

SIDES = ("torch", "jax", "torch-xla")  # torch-xla: where .venv-torchxla is built (make torch-xla)


# -- the ladder
def debug(
    name: str | None = None,
    target: str = "h100",
    side: str = "torch",
    shapes: dict | None = None,
    dtype: str = "float32",
    inject: tuple[str, ...] = (),
    from_file: str | None = None,
    seed: int = 0,
    repro_dir: str | None = None,
    cache: dict | None = None,
):
    """Run the ladder on one program and target; return a Finding.

    `cache`: a dict kept by a caller that debugs one program on several targets; R0 to R2 (and
    the capture) run once per program and are reused from it.

    Raises:
        UnknownName, InvalidShape, UnsupportedDtype: bad name, target, shapes, dtype or fault.
        PathUnavailable: side torch-xla where .venv-torchxla is not built.
        LoweringFailed: the framework could not lower the program (a capture failure is reported
            in the Finding instead, as the divergence it is).
    """
    from hardware_models.execute_plan import run_plan
    from hardware_models.pipelines import compile_plan
    from hardware_models.target import get_target
    from reference.errors import UnknownName
    from reference.faults import decomposition_hook
    from reference.ir.interpret import trace_values

    if isinstance(inject, str):
        inject = (inject,)
    if not from_file and side not in SIDES:
        raise UnknownName("side", side, SIDES)
    if not from_file and side == "torch-xla":
        from reference.errors import PathUnavailable
        from torchxla_side import available, unavailable_reason

        if not available():  # refused before anything runs
            raise PathUnavailable(unavailable_reason())
    faults = tuple(dict.fromkeys(get_fault(f).name for f in inject))
    tgt = get_target(target)
    family = tgt.family_record.name
    finding = Finding(from_file or name, "file" if from_file else side, tgt.name, dtype, faults)
    for f in faults:
        fault = get_fault(f)
        if fault.families and family not in fault.families:
            finding.not_planted.append(f"{f}: applies to the {', '.join(fault.families)} families, not {family}")
    scale = math.prod(get_fault(f).input_scale for f in faults)
    key = (name, side, tuple(sorted((shapes or {}).items())), dtype, faults, seed, from_file)
    if cache is not None and key in cache:
        program, done = cache[key]
        finding = dataclasses.replace(
            copy.deepcopy(done), target=tgt.name, not_planted=[*finding.not_planted, *copy.deepcopy(done.not_planted)]
        )
        if program is None:
            return finding
    elif from_file:
        program = program_from_file(from_file, seed)
        finding.not_planted += [
            f"{f}: a file has no framework code to plant it in" for f in faults if get_fault(f).rung in ("R1", "R2")
        ]
        finding.side, finding.dtype = "file", program.dtype
        finding.rungs += [
            Rung("R0", note="the file's program interpreted in float64"),
            Rung("R1", ran=False, note="a file has no framework code"),
            Rung("R2", ran=False, note="a file has no capture"),
        ]
        if cache is not None:
            cache[key] = (program, copy.deepcopy(finding))
    else:
        before = list(finding.not_planted)
        program = _framework_rungs(finding, name, side, shapes or {}, dtype, faults, seed, scale)
        if cache is not None:
            done = copy.deepcopy(finding)
            done.not_planted = [n for n in done.not_planted if n not in before]
            cache[key] = (program, done)
        if program is None:
            return finding
    check_trace_memory(program.lowering.module, program.name)
    bound = gate(program.dtype, program.reduction)
    for r in finding.rungs:
        if r.rung == "R0" and r.gate is None:
            r.error, r.gate = 0.0, bound.bound(1.0)
    back = (
        (lambda outs: tuple(np.asarray(o).transpose(program.out_perm) for o in outs))
        if program.out_perm
        else (lambda o: o)
    )
    module = program.lowering.module

    # R3: the lowered IR interpreted, with the decomposition fault's rewrites
    clean_out, clean_trace = trace_values(module, program.args)
    finding.noise_floor = measure(back(clean_out), program.reference, bound)[0]
    decompose = "layernorm-eps-outside-sqrt" in faults
    hook, sites = decomposition_hook(module) if decompose else (None, [])
    out3, trace3 = trace_values(module, program.args, hook) if decompose else (clean_out, clean_trace)
    rung3 = Rung("R3", *measure(back(out3), program.reference, bound))
    if decompose:
        rung3.ops_differ = len(differing_ops(trace3, clean_trace, bound))
        finding.events += [
            f"layernorm-eps-outside-sqrt: {s}: rsqrt(var + eps) computed as 1 / (sqrt(var) + eps)" for s in sites
        ]
        if not sites:
            finding.not_planted.append("layernorm-eps-outside-sqrt: no rsqrt(var + eps) in this program")
    finding.rungs.append(rung3)
    if not rung3.ok and finding.first is None:
        finding.first = "R3"
        _locate(
            finding,
            module,
            clean_trace,
            trace3,
            bound,
            lambda steps, force=None: trace_values(module, program.args, decomposition_hook(module, steps)[0], force),
            list(clean_trace),
        )

    # R4 .. R7: the compiled plan executed
    plan = compile_plan(module, tgt)
    narrow = _narrowest(plan, module, program.dtype)
    below_trace = trace3
    for rung in ("R4", "R5", "R6", "R7"):
        base = decomposition_hook(module)[0] if decompose else None
        out, trace, events = run_plan(module, plan, tgt, program.args, rung, faults, stale_seed=seed, base=base)
        rung_bound = gate(narrow, program.reduction) if rung == "R7" else bound
        record = Rung(rung, *measure(back(out), program.reference, rung_bound))
        if rung == "R7":  # its arithmetic changes: each op fed the rung below's inputs must stay within the gate
            forced = run_plan(module, plan, tgt, program.args, rung, faults, None, below_trace, seed, base)[1]
            record.ops_differ = len(differing_ops(forced, below_trace, rung_bound))
        else:  # the rest compute what the rung below does: every op, free-running, must agree
            record.ops_differ = len(differing_ops(trace, below_trace, rung_bound))
        if rung == "R7" and narrow != program.dtype:
            record.note = f"runs as {narrow} on {tgt.name}: gated at {narrow}'s tolerance"
        finding.rungs.append(record)
        finding.events += [e for e in events if e not in finding.events]
        if not record.ok and finding.first is None:
            finding.first = rung
            below = below_trace
            _locate(
                finding,
                module,
                below,
                trace,
                rung_bound,
                lambda steps, force=None, r=rung: run_plan(
                    module,
                    plan,
                    tgt,
                    program.args,
                    r,
                    faults,
                    steps,
                    force,
                    seed,
                    decomposition_hook(module)[0] if decompose else None,
                )[:2],
                list(below),
            )
        below_trace = trace
    for f in faults:
        fault = get_fault(f)
        if (
            fault.rung in ("R4", "R5", "R6", "R7")
            and not any(e.startswith(f + ":") for e in finding.events)
            and not any(n.startswith(f + ":") for n in finding.not_planted)
        ):
            finding.not_planted.append(f"{f}: no site for it in this program on {tgt.name}")
    if finding.first and finding.first not in ("R1", "R2") and repro_dir:  # R1, R2: the repro is the user's code
        finding.repro = _write_repro(program, finding, repro_dir)
    return finding


def _narrowest(plan, module, dtype: str) -> str:
    """The narrowest float type the target runs the program's float types as (R7's gate)."""
    order = ["float64", "float32", "bfloat16", "float16"]
    runs = {
        FLOAT_NAMES.get(plan.runs_as(e)) for e in ("f64", "f32", "f16", "bf16") if FLOAT_NAMES[e] in (dtype, "float32")
    }
    runs = {r for r in runs if r} | {dtype}
    eps = {"float64": 2.0**-53, "float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}
    return max(runs, key=lambda r: (eps[r], order.index(r)))


def _framework_rungs(finding: Finding, name, side, shapes, dtype, faults, seed, scale) -> Program | None:
    """R0, R1 and R2 of a catalogue entry; the program R3 onwards runs, or None where capture failed."""
    from reference.catalogue import get_entry
    from reference.errors import CaptureFailed
    from reference.inputs import make_case

    if side == "torch-xla":  # the driver in .venv-torchxla runs R1 and R2 (torchxla_side.run.ladder_case)
        sidemod = None
        from pytorch_side.faults import planted_module
    elif side == "torch":
        import pytorch_side.capture as sidemod
        from pytorch_side.faults import planted_module
    else:
        import jax_side.capture as sidemod
        from jax_side.faults import planted_module

    from reference.agreement import RUN_PARAMETER_LIMIT, check_run_memory
    from reference.errors import TooLargeToRun

    entry = get_entry(name)
    resolved = entry.resolve(shapes)
    entry.check_dtype(dtype)
    if entry.n_weights(resolved) > RUN_PARAMETER_LIMIT:
        raise TooLargeToRun(entry.name, entry.n_weights(resolved), RUN_PARAMETER_LIMIT)
    check_run_memory(entry, resolved, dtype)
    reduction = entry.reduction(resolved) if entry.reduction else 0
    case = scaled(make_case(entry, resolved, dtype, seed), scale)
    fresh = scaled(make_case(entry, resolved, dtype, (seed + 1) % 2**32), scale)
    planted, planted_by = None, ""
    for f in faults:
        if get_fault(f).rung in ("R1", "R2"):
            module = planted_module(f, entry.name)
            if module is None:
                finding.not_planted.append(f"{f}: it is planted in the softmax entry's forward, not {entry.name}")
            elif planted is not None:
                finding.not_planted.append(f"{f}: {planted_by} already replaces the same forward; plant one at a time")
            else:
                planted, planted_by = module, f
    reference = case.reference()
    bound = gate(dtype, reduction)
    finding.rungs.append(Rung("R0", 0.0, bound.bound(1.0), note="the float64 reference of the spec"))
    if sidemod is None:
        return _torchxla_rungs(
            finding, entry, resolved, case, fresh, reference, bound, planted_by if planted else None, reduction
        )
    built = sidemod.module_for(case, planted)  # weights loaded once, for R1 and the capture
    eager = sidemod.eager(case, built)
    r1 = Rung("R1", *measure(eager, reference, bound))
    finding.rungs.append(r1)
    try:
        captured = sidemod.capture(case, built)
    except CaptureFailed as err:
        _capture_failed(finding, r1, err)
        return None
    replay = captured.replay(fresh)
    r2 = Rung(
        "R2",
        *measure(replay, captured.eager(fresh), bound),
        note="replayed on fresh inputs (seed + 1) against R1 on the same inputs",
    )
    _recapture(finding, r2, entry, resolved, dtype, seed, captured, planted, sidemod)
    finding.rungs.append(r2)
    out_perm = sidemod.LAYOUTS.get(entry.name, ({}, None))[1] if side == "jax" else None
    program = Program(
        entry.name,
        side,
        dtype,
        captured.lowering,
        captured.arguments(case),
        reference,
        out_perm,
        case,
        captured,
        reduction,
    )
    return _first_framework_rung(finding, program, r1, r2, bound)


def _first_framework_rung(finding: Finding, program: Program, r1: Rung, r2: Rung, bound) -> Program:
    """R1 or R2 as the first divergent rung (R1's located in the lowered program); the program."""
    if not r1.ok:
        finding.first = "R1"
        _locate_numerics(finding, program, bound)
    elif not r2.ok:
        finding.first = "R2"
    return program


def _capture_failed(finding: Finding, r1: Rung, err) -> None:
    """R2 did not run: the capture could not follow forward; the user's line is the origin."""
    finding.rungs.append(Rung("R2", ran=False, note=str(err)))
    finding.capture_error = str(err)
    finding.first = finding.first or ("R1" if not r1.ok else "R2")
    finding.origin = (
        OpSite(f"{Path(err.file).name}:{err.line}", "the user's line", source=f"{err.cause}") if err.file else None
    )
    finding.reaches_output = None


def _torchxla_rungs(finding: Finding, entry, shapes, case, fresh, reference, bound, fault, reduction) -> Program | None:
    """R1 and R2 on torch-xla: the module run lazily on XLA's CPU device, and torch_xla.stablehlo's
    program of torch.export's graph run there (one driver process: torchxla_side.run.ladder_case);
    R3 onwards run that program's StableHLO."""
    from torchxla_side.run import ladder_case

    second = second_shapes(entry, shapes)
    got = ladder_case(case, fresh, fault, second)
    r1 = Rung("R1", *measure(got["r1"], reference, bound), note="the module on torch-xla's device (lazy tensors)")
    finding.rungs.append(r1)
    if "capture" in got:
        _capture_failed(finding, r1, got["capture"])
        return None
    r2 = Rung(
        "R2",
        *measure(got["r2"], got["eager_fresh"], bound),
        note="torch_xla.stablehlo's program of the captured graph, run on the device on fresh inputs (seed + 1), "
        "against R1 on the same inputs",
    )
    if second is not None:
        _compare_captures(finding, r2, shapes, second, got["ops"], got["second_ops"])
    finding.rungs.append(r2)
    program = Program(
        entry.name, "torch-xla", case.dtype, got["lowering"], got["arguments"], reference, None, case, None, reduction
    )
    return _first_framework_rung(finding, program, r1, r2, bound)


def second_shapes(entry, shapes: dict) -> dict | None:
    """The shapes R2 captures forward at once more: each extent parameter one step (its multiple)
    larger, as many as the entry accepts together. Kept as they are: choices, counts (a bump that
    adds or removes tensors: layers, experts), parameters that size no tensor (a top-k, a window),
    and extents of 1 (broadcasting specializes a unit axis in every framework, by design). None
    when nothing can change."""
    from reference.errors import LandscapeError

    base = entry.tensor_shapes(shapes)
    out = dict(shapes)
    for p in entry.params:
        value = out[p.name]
        if p.choices or not isinstance(value, int) or value == 1:
            continue
        trial = {**out, p.name: value + p.multiple_of}
        try:
            trial = entry.resolve(trial)
        except LandscapeError:
            continue
        now, grown = entry.tensor_shapes(out), entry.tensor_shapes(trial)
        if set(grown) != set(base) or grown == now or any(len(grown[k]) != len(now[k]) for k in now):
            continue
        out = trial
    return out if out != dict(shapes) else None


def _recapture(finding: Finding, r2: Rung, entry, shapes, dtype, seed, captured, planted, sidemod) -> None:
    """R2's second question: captured again at a second shape (second_shapes), is the graph the
    same program? Its ops, in order, must be the same ops (their shapes aside). A graph whose ops
    change took a branch on a shape at capture: the graph captured first holds that branch only
    (torch.export specializes it and guards the shape; a jax.jit retrace builds another graph)."""
    from reference.errors import LandscapeError
    from reference.inputs import make_case

    second = second_shapes(entry, shapes)
    if second is None:
        return
    case = make_case(entry, second, dtype, seed)
    try:
        again = sidemod.recapture_ops(case, sidemod.module_for(case, planted))
    except LandscapeError as err:
        again = err
    _compare_captures(finding, r2, shapes, second, captured.ops, again)


def _compare_captures(finding: Finding, r2: Rung, shapes: dict, second: dict, first: list, again) -> None:
    """The graph captured at `shapes` (its ops `first`) against the one at `second` (`again`, or
    the error that capture raised): the same ops in order, or R2 diverges at the user's line."""
    label = ", ".join(f"{k}={v}" for k, v in second.items() if v != shapes[k])
    at = ", ".join(f"{k}={shapes[k]}" for k, v in second.items() if v != shapes[k])
    if isinstance(again, Exception):
        r2.note += f"; not captured again at {label}: {str(again).splitlines()[0]}"
        return
    names = [op for op, _, _ in first], [op for op, _, _ in again]
    if names[0] == names[1]:
        r2.note += f"; captured again at {label}: the same {len(first)} op{'' if len(first) == 1 else 's'}"
        return
    i = next((k for k, (a, b) in enumerate(zip(*names)) if a != b), min(map(len, names)))
    r2.ops_differ = max(map(len, names)) - i
    op, line, code = first[i] if i < len(first) else again[i]
    where = f"{line} `{code}`" if line else "no source line"
    was = first[i][0] if i < len(first) else "nothing (the graph ends)"
    now = again[i][0] if i < len(again) else "nothing (the graph ends)"
    finding.specialized = (
        f"captured again at {label} (was {at}), the graph changes at its op {i + 1}: {was} there, {now} here, "
        f"from {where}: forward branches on a shape, and the graph captured at {at} holds only the branch "
        "taken there; branch with torch.where/jnp.where or torch.cond/lax.cond, or capture one graph per shape"
    )
    r2.note += f"; captured again at {label}, {r2.ops_differ} of its ops differ"
    finding.origin = OpSite(line or "?", "the user's line", source=code)
    finding.reaches_output = None


def _site(module, key: str) -> OpSite:
    from reference.ir.graph import Op

    if key.endswith(":copy-in"):
        return OpSite(key, "copy of an argument onto the chip")
    instance, _, value = key.partition("%")
    fn = instance.rsplit(":", 1)[-1] if ":" in instance else "main"
    try:
        ops = module.function(fn).ops
    except KeyError:
        ops = ()
    op: Op | None = next((o for o in ops if o.results and o.results[0] == f"%{value}"), None)
    if op is None:
        return OpSite(key, "copy" if "landscape.copy" in key else "?")
    return OpSite(key, op.short_name, op.origin.scope, op.origin.source)


def _locate(finding, module, below: dict, trace: dict, bound, rerun, order: list[str]):
    """Origin (teacher-forced), manifests (free-running), reach, and the bisected sub-step."""
    _, forced = rerun(None, below)
    origin = next((k for k in order if k in forced and op_differs(forced[k], below[k], bound)), None)
    if origin is None:  # no op is wrong on its own: the rung's roundings accumulate; name where it first shows
        origin = next((k for k in trace if k in below and op_differs(trace[k], below[k], bound)), None)
        finding.accumulated = origin is not None
    shown = [k for k in order if k in trace and op_differs(trace[k], below[k], bound)]
    finding.origin = _site(module, origin) if origin else None
    finding.manifests = [_site(module, k) for k in shown]
    out_rung = next(r for r in finding.rungs if r.rung == finding.first)
    finding.reaches_output = bool(
        out_rung.error is not None and out_rung.gate is not None and out_rung.error > out_rung.gate
    )
    # bisect the rung's sub-steps (its ops in order) to the first that makes any op differ
    lo, hi = 0, len(order)
    runs = 0
    while lo < hi:
        mid = (lo + hi) // 2
        _, t = rerun(frozenset(order[: mid + 1]))
        runs += 1
        if any(k in below and op_differs(t[k], below[k], bound) for k in t):
            hi = mid
        else:
            lo = mid + 1
    if lo < len(order):
        finding.bisect = f"sub-step {lo + 1} of {len(order)} ({order[lo]}), in {runs} runs"


# An op in its dtype against its float64 twin is allowed NUMERICS_SLACK times the program's gate
# (chosen, not fitted: one op's rounding is far below the gate, an overflow or a lost max far above).
NUMERICS_SLACK = 4


def _locate_numerics(finding, program: Program, bound):
    """R1 diverged: teacher-force the lowered program in its dtype against its float64 twin."""
    from reference.ir.interpret import trace_values, widened

    module = program.lowering.module
    _, wide = trace_values(widened(module), program.args)
    _, forced = trace_values(module, program.args, force=wide)
    order = list(forced)
    origin = next(
        (k for k in order if k in wide and op_differs(forced[k], wide[k], bound.widened(NUMERICS_SLACK))), None
    )
    _, free = trace_values(module, program.args)
    finding.origin = _site(module, origin) if origin else None
    finding.manifests = [
        _site(module, k) for k in order if k in wide and op_differs(free[k], wide[k], bound.widened(NUMERICS_SLACK))
    ]
    finding.reaches_output = True


def _write_repro(program: Program, finding: Finding, directory: str) -> str:
    """The program's StableHLO and arguments, written for `landscape debug --from-file`."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    suffix = f"-{finding.target}-{'-'.join(finding.faults) or 'clean'}"
    stem = Path(program.name).stem
    stem = stem[: -len(suffix)] if stem.endswith(suffix) else stem  # a repro debugged again keeps its name
    base = Path(directory) / f"{stem}{suffix}"
    for n in range(2, 1000):  # never over a file already there (the user's, or an earlier run's)
        if not any(Path(str(base) + ext).exists() for ext in (".mlir", ".npz", "-shrunk.mlir", "-shrunk.npz")):
            break
        base = Path(directory) / f"{stem}{suffix}-{n}"
    text = program.lowering.stages.get("stablehlo") or ""
    mlir = Path(str(base) + ".mlir")
    write_file(mlir, text)
    # bf16 and f8 arguments are stored widened to f32 (exact); the program converts them back
    arrays = {
        f"arg{i}": (np.asarray(a).astype(np.float32) if np.asarray(a).dtype.kind == "V" else np.asarray(a))
        for i, a in enumerate(program.args)
    }
    write_file(Path(str(base) + ".npz"), writer=lambda tmp: np.savez(tmp, **arrays))
    _shrink(finding, text, base, arrays)
    return str(mlir)


def _shrink(finding: Finding, text: str, base: Path, arrays: dict) -> None:
    """The smallest cut of main that still diverges at the same rung: cut after the originating op,
    else after the last op of main where the fault shows (a fault that needs the ops after its
    origin, as a fusion does); each cut is debugged again and kept only if it reproduces."""
    from reference.errors import LandscapeError
    from reference.ir.shrink import truncate_at

    sites = [s.key for s in ([finding.origin] if finding.origin else []) + finding.manifests[::-1]]
    cuts = list(dict.fromkeys(k for k in sites if k.startswith("main%") and ":" not in k and "landscape." not in k))
    path = Path(str(base) + "-shrunk.mlir")
    for cut in cuts[:2]:
        try:
            write_file(path, truncate_at(text, cut[len("main") :]))
            write_file(Path(str(base) + "-shrunk.npz"), writer=lambda tmp: np.savez(tmp, **arrays))
            again = debug(target=finding.target, inject=finding.faults, from_file=str(path))
        except LandscapeError:
            continue
        if again.first == finding.first:
            finding.shrunk = str(path)
            return
    for leftover in (path, Path(str(base) + "-shrunk.npz")):
        leftover.unlink(missing_ok=True)
