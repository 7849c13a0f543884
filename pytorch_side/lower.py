"""The PyTorch path: torch.export -> ATen FX graph -> torch-mlir -> StableHLO -> IR.

Parameters are graph inputs (torch.func.functional_call), and the module and example inputs
are fake tensors (FakeTensorMode), so no weights are materialized: a 405B model lowers as
easily as a small one. Modules are created with their dtype set at construction, because
`.to(dtype)` under fake mode fails.
"""

from __future__ import annotations

import dataclasses

from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from pytorch_side.export import eval_note, export_module, to_stablehlo
from pytorch_side.kernels import build, example_inputs, regional_parts
from reference.ir import parse_stablehlo, verify
from reference.lowering import Lowering


def lower_module(module: nn.Module, *example_inputs, name: str = "module", regional: bool = False) -> Lowering:
    """Lower any nn.Module at example inputs (fake tensors recommended) through torch-mlir.
    A module in training mode is lowered in eval mode, and non-tensor outputs are left out;
    both are said in the Lowering's notes. With `regional`, a module holding a stack of
    identical layers lowers one of them, called once per layer (pytorch_side/regional.py):
    the time of a one-layer model, the same program counted.

    Raises:
        CaptureFailed: torch.export met data-dependent control flow (export_module).
        LoweringFailed: torch.export or torch-mlir could not lower the module (with
            torch-mlir's root cause and the user's source line), or it returns no tensor.
    """
    if regional:
        from pytorch_side.regional import lower_stack

        return lower_stack(module, *example_inputs, name=name)
    notes: list[str] = []
    exported = export_module(module, *example_inputs, name=name, notes=notes)
    return lower_exported(exported, module, len(example_inputs), name, tuple(notes))


def lower_exported(
    exported, module: nn.Module, n_example_inputs: int, name: str = "module", notes: tuple[str, ...] = ()
) -> Lowering:
    """torch-mlir's StableHLO of an exported program (export_module's), as a Lowering.

    Raises:
        LoweringFailed: torch-mlir could not lower it (`to_stablehlo`).
    """
    params = dict(module.named_parameters())
    state = {**params, **dict(module.named_buffers())}
    mlir_module, retried = to_stablehlo(exported, name)
    notes = notes + retried
    text = mlir_module.operation.get_asm(enable_debug_info=True)
    ir_module = verify(parse_stablehlo(text))
    n_inputs = len(state) + n_example_inputs
    param_args, buffer_args = (), ()
    if len(ir_module.main.args) == n_inputs:  # else torch-mlir dropped an argument: no weights are known
        param_args, buffer_args = tuple(range(len(params))), tuple(range(len(params), len(state)))
        names = (*state, *(f"inputs[{i}]" for i in range(n_example_inputs)))
        main = dataclasses.replace(ir_module.main, arg_names=names)
        ir_module = dataclasses.replace(
            ir_module, functions=tuple(main if f.name == main.name else f for f in ir_module.functions)
        )
    stages = {
        "fx": exported.graph_module.print_readable(print_output=False),
        "stablehlo": mlir_module.operation.get_asm(),
    }
    return Lowering(
        "torch", name, stages, ir_module, param_args, buffer_args=buffer_args, notes=eval_note(module) + tuple(notes)
    )


def lower_entry(name: str, shapes: dict, dtype: str) -> Lowering:
    """Lower a catalogue entry (resolved shapes) with a fake module and fake inputs."""
    from pytorch_side.layers import routed_moe

    with FakeTensorMode(allow_non_fake_inputs=True), routed_moe():  # the costed graph routes its tokens
        module = build(name, shapes, dtype)
        inputs = example_inputs(name, shapes, dtype)
        return lower_module(module, *inputs, name=name)


def lower_regional(name: str, shapes: dict, dtype: str) -> Lowering:
    """Lower a decoder (model or `decoder` entry) as prologue + one block x layers + epilogue.

    Each part goes through torch.export and torch-mlir once, so the time does not grow with
    the number of layers; the IR's call to the block carries trip_count = layers.
    """
    from pytorch_side.layers import routed_moe
    from reference.ir.compose import compose_regional
    from reference.regional import regional_plan

    plan = regional_plan(name, shapes)
    cfg = plan.cfg
    with FakeTensorMode(allow_non_fake_inputs=True), routed_moe():  # the costed graph routes its tokens
        parts = tuple(
            lower_module(make().eval(), *inputs, name=f"{name}.{label}")
            for label, make, inputs in regional_parts(plan, dtype)
        )
    module, params, buffers = compose_regional(
        *(p.module for p in parts),
        plan.layers,
        tuple(len(p.param_args) for p in parts),
        int(cfg.tie_embeddings),
        n_state=tuple(p.state_args for p in parts),
    )
    stages = {stage: "\n".join(f"// ---- {p.name}\n{p.stages[stage]}" for p in parts) for stage in ("fx", "stablehlo")}
    return dataclasses.replace(
        parts[1], name=name, stages=stages, module=verify(module), param_args=params, buffer_args=buffers
    )
