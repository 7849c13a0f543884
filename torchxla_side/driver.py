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

        (make, inputs), = [(make, inputs) for label, make, inputs in regional_parts(regional_plan(name, shapes), dtype)
                           if label == part]
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
        "with computed indices)"]


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
    meta = program._bundle.stablehlo_funcs[0].meta  # the function's argument locations
    buffers = {k for k, _ in module.named_buffers()}
    args = []
    for loc in meta.input_locations:
        kind = loc.type_.value
        if kind == "parameter":
            args.append({"kind": "buffer" if loc.name in buffers else "parameter", "name": loc.name})
        elif kind == "input_arg":
            args.append({"kind": "input", "name": f"inputs[{loc.position}]"})
        else:
            args.append({"kind": "constant", "name": loc.name})
    return {"ok": True, "args": args, "notes": notes,
            "parameters": [k for k, _ in module.named_parameters()], "buffers": [k for k, _ in module.named_buffers()],
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * PEAK_RSS_UNIT}


def run(job: dict) -> dict:
    import numpy as np
    import torch
    import torch_xla

    from pytorch_side.kernels import TORCH_DTYPES

    dt = TORCH_DTYPES[job["dtype"]]
    arrays = np.load(job["arrays"])
    make, _ = _module(job)
    module = make().eval()
    weights = {k[2:]: torch.from_numpy(arrays[k]) for k in arrays.files if k.startswith("w:")}
    if weights:
        state = module.state_dict()
        module.load_state_dict({k: v.to(state[k].dtype) for k, v in weights.items()}, strict=True)
    device = torch_xla.device()
    module = module.to(device)
    inputs = []
    for k in job["inputs"]:
        t = torch.from_numpy(arrays[f"x:{k}"])
        inputs.append((t if not t.is_floating_point() else t.to(dt)).to(device))
    with torch.no_grad():
        out = module(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    np.savez(job["out"], **{f"o{i}": o.detach().cpu().to(torch.float32).numpy() if o.is_floating_point()
                            else o.detach().cpu().numpy() for i, o in enumerate(outs)})
    return {"ok": True}


def main(request_path: str) -> int:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    warnings.simplefilter("ignore")
    with open(request_path) as f:
        jobs = json.load(f)["jobs"]
    results = []
    for i, job in enumerate(jobs):
        print(f"{JOB_MARK}{i}", file=sys.stderr, flush=True)  # the host names the job XLA aborted in, if any
        try:
            with contextlib.redirect_stdout(sys.stderr):  # torch-xla's prints must not mix with the answer
                results.append({"lower": lower, "run": run}[job["kind"]](job))
        except Exception as err:  # noqa: BLE001 - each job answers for itself, in one line
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            results.append({"ok": False, "error": f"{type(err).__name__}: {first}"})
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
