"""The torch-xla driver: runs inside .venv-torchxla (torch 2.9, torch-xla 2.9, XLA's CPU device),
never in the main venv. `python -m torchxla_side.driver REQUEST.json` reads a list of jobs, runs
them in one process (torch-xla's import costs about 5 s, paid once) and prints one JSON line:
{"results": [one per job]}. A job that fails gives {"ok": false, "error": "..."}; the others run.

Jobs:
    {"kind": "lower", "name": ENTRY, "shapes": {...}, "dtype": D, "part": null | "prologue" |
     "block" | "epilogue", "out": FILE}
        The catalogue's PyTorch module (pytorch_side.kernels.build, or one part of a decoder's
        regional plan) exported by torch.export, then torch_xla.stablehlo.exported_program_to_stablehlo
        with export_weights=False; StableHLO text to FILE. The weights are real tensors (torch-xla
        cannot trace fake ones) but never initialized (torch.nn.init's initializers skipped): a part
        of a published model materializes one layer at most.
        Result: {"ok", "args": [{"kind": "parameter" | "buffer" | "input" | "constant", "name"}],
        "notes": [...], "peak_rss_bytes"}.
    {"kind": "run", "name": ENTRY, "shapes": {...}, "dtype": D, "inputs": [NAME, ...], "arrays": FILE.npz,
     "out": FILE.npz}
        The module with the weights in FILE.npz ("w:" + canonical name) on the XLA CPU device,
        called on its inputs ("x:" + NAME, in the order given); outputs to out ("o0", "o1", ...) as
        float32 (bfloat16 and float16 widen exactly).
    {"kind": "ladder", "name": ENTRY, "shapes": {...}, "dtype": D, "fault": null | NAME, "inputs": [...],
     "arrays": FILE.npz, "second": null | {...}, "out": FILE.npz}
        The debugger's R1 and R2 on torch-xla (landscape.debug): the module (or the course's buggy
        one, pytorch_side.faults) with the weights in arrays, run lazily on the XLA device on the
        case's inputs ("x:") and on fresh ones ("f:"): outputs "r1:I" and "e:I"; then torch.export
        on the CPU, and torch_xla.stablehlo's program of it run on the device (torch-xla's StableHLO
        runtime) on the fresh inputs, "r2:I".
        Result: {"ok", "args" (as lower's), "stablehlo": text, "ops": the graph's ops
        (pytorch_side.graph_ops), "second_ops": the ops captured at `second`'s shapes}; the values
        of the program's non-input arguments go to out as "a:I" (I: the argument's position). A
        capture that cannot follow forward answers {"ok", "capture": {"message", "file", "line", "cause"}},
        with "r1:I" and "e:I" in out.
    A lower job with "xla": true also runs the module lazily on the device and answers "xla":
    torch-xla's own optimized HLO, XLA's dump of the graph it compiled (the request's jobs share
    one dump folder, "xla_dump", set before torch-xla starts).

Imports only torch, torch_xla, numpy, pytorch_side's modules and reference's catalogue (numpy),
so the main venv's packages (jax, torch-mlir) are never needed here.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import warnings

PEAK_RSS_UNIT = 1024  # ru_maxrss is in kilobytes on Linux
JOB_MARK = "torchxla-driver: job "


def _module(job: dict):
    """(module factory, example inputs) for a job: the catalogue's module, or one part of a
    decoder's regional plan, as torch-mlir's path builds them (pytorch_side.kernels)."""
    from pytorch_side.kernels import build, example_inputs, regional_parts

    name, shapes, part, dtype = job["name"], dict(job["shapes"]), job.get("part"), job["dtype"]
    if part:
        from reference.regional import regional_plan

        ((make, inputs),) = [
            (make, inputs)
            for label, make, inputs in regional_parts(regional_plan(name, shapes), dtype)
            if label == part
        ]
    else:
        make, inputs = (lambda: build(name, shapes, dtype)), example_inputs(name, shapes, dtype)
    return make, [t.zero_() for t in inputs]  # written: an index must be in range where the graph reads it


@contextlib.contextmanager
def _uninitialized(torch):
    """Modules built here allocate their weights but skip their random initialization (the
    values do not matter to a lowering; a 70B layer's init would take seconds): torch.nn.init's
    in-place initializers return the tensor untouched. Buffers computed at construction (RoPE's
    frequencies) are computed as usual."""
    init = torch.nn.init
    names = [n for n in dir(init) if n.endswith("_") and not n.startswith("_") and callable(getattr(init, n))]
    saved = {n: getattr(init, n) for n in names}
    try:
        for n in names:
            setattr(init, n, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for n, fn in saved.items():
            setattr(init, n, fn)


def _workarounds(exported, torch):
    """(the exported program, notes): torch-xla 2.9 aborts the process (XLA's "Check failed: buffer
    != nullptr") on aten.index_select whose indices are computed (the routed MoE's top-k rows); the
    same rows taken by aten.index are the same values, so such a program's index_selects are
    rewritten to it, and a note says so. Nothing else is decomposed: the program stays torch-xla's."""
    index_select = torch.ops.aten.index_select.default
    count = sum(1 for n in exported.graph.nodes if n.target is index_select)
    if not count:
        return exported, []
    table = {index_select: lambda x, dim, idx: torch.ops.aten.index.Tensor(x, [None] * dim + [idx])}
    return exported.run_decompositions(table), [
        f"{count} aten.index_select exported as aten.index (the same rows; torch-xla 2.9 aborts on index_select "
        "with computed indices)"
    ]


def lower(job: dict) -> dict:
    import torch
    from torch_xla.stablehlo import StableHLOExportOptions, exported_program_to_stablehlo

    from pytorch_side.layers import routed_moe

    make, inputs = _module(job)
    with routed_moe():  # the costed graph routes its tokens, as the torch-mlir path's does
        with _uninitialized(torch):
            module = make().eval()
        exported = torch.export.export(module, tuple(inputs))
        exported, notes = _workarounds(exported, torch)
        program = exported_program_to_stablehlo(exported, StableHLOExportOptions(export_weights=False))
    text = program.get_stablehlo_text("forward")
    with open(job["out"], "w") as f:
        f.write(text)
    answer = {
        "ok": True,
        "args": _arguments(program, module),
        "notes": notes,
        "parameters": [k for k, _ in module.named_parameters()],
        "buffers": [k for k, _ in module.named_buffers()],
    }
    if job.get("xla"):
        answer["xla"] = _optimized_hlo(module, inputs, job["xla_dump"], torch)
    answer["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * PEAK_RSS_UNIT
    return answer


def _arguments(program, module) -> list[dict]:
    """The StableHLO function's arguments, in torch-xla's order: parameter, buffer, input or constant."""
    meta = program._bundle.stablehlo_funcs[0].meta  # the function's argument locations
    buffers = {k for k, _ in module.named_buffers()}
    args = []
    for loc in meta.input_locations:
        kind = loc.type_.value
        if kind == "parameter":
            args.append({"kind": "buffer" if loc.name in buffers else "parameter", "name": loc.name})
        elif kind == "input_arg":
            args.append({"kind": "input", "name": f"inputs[{loc.position}]"})
        else:  # a tensor the graph holds (torch_xla.stablehlo's additional_constants[position])
            args.append({"kind": "constant", "name": loc.name, "position": loc.position})
    return args


def _optimized_hlo(module, inputs, dump_dir: str, torch) -> str:
    """torch-xla's own optimized HLO: the module run lazily on the XLA device, its graph compiled
    at the sync, and XLA's text dump of it after optimization (the newest the sync wrote)."""
    import torch_xla

    before = set(os.listdir(dump_dir)) if os.path.isdir(dump_dir) else set()
    device = torch_xla.device()
    with torch.no_grad():
        out = module.to(device)(*(t.to(device) for t in inputs))
    torch_xla.sync(wait=True)
    del out
    written = [f for f in os.listdir(dump_dir) if f.endswith(".cpu_after_optimizations.txt") and f not in before]
    if not written:
        raise RuntimeError("XLA wrote no optimized HLO for the module's graph")
    newest = max(written, key=lambda f: os.path.getmtime(os.path.join(dump_dir, f)))
    with open(os.path.join(dump_dir, newest)) as f:
        return f.read()


def _loaded(job: dict, arrays, torch):
    """The job's module (or the course's buggy one for job["fault"]) with the weights in arrays."""
    from pytorch_side.faults import planted_module

    make, _ = _module(job)
    module = (planted_module(job["fault"], job["name"]) if job.get("fault") else None) or make()
    module = module.eval()
    weights = {k[2:]: torch.from_numpy(arrays[k]) for k in arrays.files if k.startswith("w:")}
    if weights:
        state = module.state_dict()
        module.load_state_dict({k: v.to(state[k].dtype) for k, v in weights.items()}, strict=True)
    return module


def _inputs(job: dict, arrays, prefix: str, dt, device, torch) -> list:
    """The job's inputs from arrays (keys prefix + name, in job["inputs"] order), floats in the job's dtype, on device."""
    out = []
    for k in job["inputs"]:
        t = torch.from_numpy(arrays[prefix + k])
        out.append((t if not t.is_floating_point() else t.to(dt)).to(device))
    return out


def _outputs(out) -> list:
    import torch

    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [
        o.detach().cpu().to(torch.float32).numpy() if o.is_floating_point() else o.detach().cpu().numpy() for o in outs
    ]


def ladder(job: dict) -> dict:
    import numpy as np
    import torch
    import torch_xla
    from torch_xla.stablehlo import StableHLOExportOptions, exported_program_to_stablehlo

    from pytorch_side.graph_ops import graph_ops
    from pytorch_side.kernels import TORCH_DTYPES, build, example_inputs
    from reference.errors import DATA_DEPENDENT, CaptureFailed

    dt = TORCH_DTYPES[job["dtype"]]
    arrays = np.load(job["arrays"])
    module = _loaded(job, arrays, torch)

    inputs = lambda prefix, device: _inputs(job, arrays, prefix, dt, device, torch)  # noqa: E731

    device, saved = torch_xla.device(), {}
    with torch.no_grad():  # R1: the module run lazily on the device (its graphs compiled at each read)
        on_device = module.to(device)
        saved.update({f"r1:{i}": o for i, o in enumerate(_outputs(on_device(*inputs("x:", device))))})
        saved.update({f"e:{i}": o for i, o in enumerate(_outputs(on_device(*inputs("f:", device))))})
    module = module.to("cpu")
    try:
        exported = torch.export.export(module, tuple(inputs("x:", "cpu")))
    except Exception as err:  # noqa: BLE001 - a capture that cannot follow forward is the finding
        if type(err).__name__ in DATA_DEPENDENT or "data-dependent" in str(err):
            np.savez(job["out"], **saved)
            failed = CaptureFailed.from_exception(err, "torch.export")
            return {
                "ok": True,
                "capture": {"message": str(failed), "file": failed.file, "line": failed.line, "cause": failed.cause},
            }
        raise
    # exported without its weights (torch_xla.stablehlo copies them through numpy, which has no bfloat16), then
    # given the module's own, on the device, where the program's call looks its parameters up (the bundle)
    program = exported_program_to_stablehlo(exported, StableHLOExportOptions(export_weights=False))
    program._bundle.state_dict = {
        k: v.detach().to(device) for k, v in {**dict(module.named_parameters()), **dict(module.named_buffers())}.items()
    }
    with torch.no_grad():  # R2: torch-xla's StableHLO program of the captured graph, on the fresh inputs
        saved.update({f"r2:{i}": o for i, o in enumerate(_outputs(program(*inputs("f:", device))))})
    args = _arguments(program, module)
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    for i, a in enumerate(args):
        if a["kind"] == "input":
            continue
        value = state[a["name"]] if a["kind"] != "constant" else program._bundle.additional_constants[a["position"]]
        value = torch.as_tensor(value).detach().cpu()
        saved[f"a:{i}"] = (value.to(torch.float32) if value.is_floating_point() else value).numpy()
    np.savez(job["out"], **saved)
    second = None
    if job.get("second"):
        from pytorch_side.faults import planted_module

        shapes = dict(job["second"])
        again = (planted_module(job["fault"], job["name"]) if job.get("fault") else None) or build(
            job["name"], shapes, job["dtype"]
        )
        second = graph_ops(torch.export.export(again.eval(), tuple(example_inputs(job["name"], shapes, job["dtype"]))))
    return {
        "ok": True,
        "args": args,
        "stablehlo": program.get_stablehlo_text("forward"),
        "ops": graph_ops(exported),
        "second_ops": second,
        "parameters": [k for k, _ in module.named_parameters()],
        "buffers": [k for k, _ in module.named_buffers()],
    }


def run(job: dict) -> dict:
    import numpy as np
    import torch
    import torch_xla

    from pytorch_side.kernels import TORCH_DTYPES

    dt = TORCH_DTYPES[job["dtype"]]
    arrays = np.load(job["arrays"])
    device = torch_xla.device()
    module = _loaded(job, arrays, torch).to(device)
    with torch.no_grad():
        out = module(*_inputs(job, arrays, "x:", dt, device, torch))
    np.savez(job["out"], **{f"o{i}": o for i, o in enumerate(_outputs(out))})
    return {"ok": True}


def main(request_path: str) -> int:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    warnings.simplefilter("ignore")
    with open(request_path) as f:
        jobs = json.load(f)["jobs"]
    dumps = [job["xla_dump"] for job in jobs if job.get("xla")]
    if dumps:  # read when torch-xla starts its client: before the first job imports it
        os.environ["XLA_FLAGS"] = f"--xla_dump_to={dumps[0]} --xla_dump_hlo_as_text"
    results = []
    for i, job in enumerate(jobs):
        print(f"{JOB_MARK}{i}", file=sys.stderr, flush=True)  # the host names the job XLA aborted in, if any
        try:
            with contextlib.redirect_stdout(sys.stderr):  # torch-xla's prints must not mix with the answer
                results.append({"lower": lower, "run": run, "ladder": ladder}[job["kind"]](job))
        except Exception as err:  # noqa: BLE001 - each job answers for itself, in one line
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            results.append({"ok": False, "error": f"{type(err).__name__}: {first}"})
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
