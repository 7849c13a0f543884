"""The PyTorch path: torch.export -> ATen FX graph -> torch-mlir -> StableHLO -> IR.

Parameters are graph inputs (torch.func.functional_call), and the module and example inputs
are fake tensors (FakeTensorMode), so no weights are materialized: a 405B model lowers as
easily as a small one. Modules are created with their dtype set at construction, because
`.to(dtype)` under fake mode fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch import nn

from pytorch_side.kernels import build, example_inputs, regional_parts
from reference.errors import LoweringFailed
from reference.ir import parse_stablehlo, verify
from reference.lowering import Lowering


class _ParamsAsInputs(nn.Module):
    """forward(params, *inputs) = module(*inputs) with `params` substituted for its weights,
    its outputs reduced to their tensors (`tensor_outputs`).

    The module is held outside nn.Module's registry, so its own parameters are not lifted
    into the exported program; only the ones passed in are graph inputs.
    """

    def __init__(self, module: nn.Module, dropped: dict[str, str]):
        super().__init__()
        self._held = (module, dropped)  # dropped: output path -> type name, of what was not a tensor

    def forward(self, params, *inputs):
        out = torch.func.functional_call(self._held[0], params, inputs)
        return out if isinstance(out, torch.Tensor) else tensor_outputs(out, self._held[1])


def tensor_outputs(value, dropped: dict[str, str], path: str = "output") -> tuple[torch.Tensor, ...]:
    """The tensors of a module's output, in order, through tuples, lists, dicts (Hugging Face's
    ModelOutput is one) and dataclasses; anything else (None, a number, a KV-cache object) is
    left out and recorded in `dropped` by its path ("output.past_key_values": "DynamicCache")."""
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (tuple, list)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(value, dict):
        items = [(f"{path}.{k}", v) for k, v in value.items()]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f"{path}.{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)]
    else:
        if value is not None:
            dropped[path] = type(value).__name__
        return ()
    return tuple(t for p, v in items for t in tensor_outputs(v, dropped, p))


# Layers whose forward differs in training mode: dropout draws random masks (stablehlo.rng ops,
# costed as unknown), batch norm updates its running statistics.
MODE_DEPENDENT = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


def _eval_note(module: nn.Module) -> tuple[str, ...]:
    """A note when the module is in training mode and holds layers that behave differently in it."""
    layers = sorted({type(m).__name__ for m in module.modules() if m.training and isinstance(m, MODE_DEPENDENT)})
    if not layers:
        return ()
    verb = "behaves" if len(layers) == 1 else "behave"
    return (f"the module is in training mode ({', '.join(layers)} {verb} differently in it): it was lowered in "
            "eval mode, as inference runs it; call .eval() first to make that explicit",)


@contextlib.contextmanager
def _in_eval_mode(module: nn.Module):
    """The module in eval mode for the block, each submodule's own mode restored after."""
    training = [m for m in module.modules() if m.training]
    for m in training:
        m.training = False
    try:
        yield
    finally:
        for m in training:
            m.training = True


def quiet():
    """torch.export's own output muted for the call (its loggers, and the partial graph it prints
    to stderr on a failure): the caller says what failed in one line instead."""
    import contextlib
    import io
    import logging

    @contextlib.contextmanager
    def muted():
        previous = logging.root.manager.disable
        logging.disable(logging.CRITICAL)
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                yield
        finally:
            logging.disable(previous)

    return muted()


def export_module(module: nn.Module, *example_inputs, name: str = "module", notes: list[str] | None = None):
    """torch.export of the module with its state (weights, then buffers: Rotary's inv_freq) as
    graph inputs, in that order, before the activations. The module is exported in eval mode
    (its own mode is restored after), HF's fused MoE experts in a static routed form
    (pytorch_side/static_experts.py), and its outputs are reduced to their tensors; what that
    left out or swapped is appended to `notes`, with what to pass instead.

    Raises:
        CaptureFailed: data-dependent control flow or a host sync; names the user's line and the fix.
        LoweringFailed: the module returns no tensor; any other export failure, in one line.
    """
    from reference.errors import DATA_DEPENDENT, CaptureFailed

    from pytorch_side.static_experts import static_experts

    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    dropped: dict[str, str] = {}
    wrapper = _ParamsAsInputs(module, dropped)
    swapped: list[str] = []
    try:
        with warnings.catch_warnings(), quiet(), _in_eval_mode(module), static_experts(module, swapped):
            warnings.simplefilter("ignore", FutureWarning)  # torch-mlir's pytree deprecation notice
            exported = torch.export.export(wrapper, (state, *example_inputs))
    except Exception as err:  # noqa: BLE001 - data-dependent control flow names the user's line and the fix
        if type(err).__name__ in DATA_DEPENDENT or "data-dependent" in str(err):
            raise CaptureFailed.from_exception(err, "torch.export") from err
        raise LoweringFailed(f"{name}: torch lowering failed: {type(err).__name__}: {str(err).splitlines()[0]}") from err
    if notes is not None:
        notes.extend(swapped)
    left_out = ", ".join(f"{path} ({kind})" for path, kind in dropped.items())
    if not exported.graph_signature.output_specs:
        raise LoweringFailed(f"{name}: the module returns no tensor ({left_out or 'nothing'}); return tensors, or for "
                             "a Hugging Face model pass use_cache=False (its cache is an object, not a tensor)")
    if left_out and notes is not None:
        notes.append(f"outputs that are not tensors were left out of the lowered program: {left_out} "
                     "(for a Hugging Face model, use_cache=False does not build the cache at all)")
    return exported


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


def lower_exported(exported, module: nn.Module, n_example_inputs: int, name: str = "module",
                   notes: tuple[str, ...] = ()) -> Lowering:
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
        ir_module = dataclasses.replace(ir_module, functions=tuple(main if f.name == main.name else f for f in ir_module.functions))
    stages = {"fx": exported.graph_module.print_readable(print_output=False), "stablehlo": mlir_module.operation.get_asm()}
    return Lowering("torch", name, stages, ir_module, param_args, buffer_args=buffer_args,
                    notes=_eval_note(module) + tuple(notes))


STRIDED_VIEW = "Cannot view a tensor"  # torch's message for a view of a tensor whose strides forbid it


def _views_as_reshapes(exported) -> int:
    """Rewrite the exported graph's aten.view ops as aten.reshape (the same values in a functional
    graph; a reshape copies where strides forbid a view). Returns how many were rewritten."""
    count = 0
    for node in exported.graph_module.graph.nodes:
        if node.target is torch.ops.aten.view.default:
            node.target = torch.ops.aten.reshape.default
            count += 1
    exported.graph_module.recompile()
    return count


def to_stablehlo(exported, name: str = "module"):
    """torch-mlir's StableHLO MLIR module of an exported program, and notes.

    torch-mlir's decompositions can leave a view on a tensor they made non-contiguous, which
    fails with "Cannot view a tensor ..." (HF GPT-2's Conv1D views the output of the attention
    it decomposes). The exported graph is functional, so a view and a reshape compute the same
    values: on that failure the views are retried as reshapes, and a note says so.

    Raises:
        LoweringFailed: torch-mlir could not lower it: the first error of its diagnostics (the
            op it could not legalize, the user's source line), else its exception's first line.
    """
    from torch_mlir import fx

    from pytorch_side.diagnostics import captured_stderr, root_cause

    notes: tuple[str, ...] = ()
    for attempt in range(2):
        try:
            with warnings.catch_warnings(), captured_stderr() as diagnostics:
                warnings.simplefilter("ignore", FutureWarning)  # torch's pytree deprecation notices
                return fx.export_and_import(exported, output_type="stablehlo"), notes
        except Exception as err:  # noqa: BLE001 - any compiler failure is reported as one line
            if attempt == 0 and STRIDED_VIEW in str(err) and (n := _views_as_reshapes(exported)):
                notes = (f"torch-mlir's decompositions left a view on a non-contiguous tensor; the graph's {n} views "
                         "were lowered as reshapes (the same values)",)
                continue
            cause = root_cause("".join(diagnostics))
            detail = f"torch-mlir: {cause}" if cause else f"{type(err).__name__}: {str(err).splitlines()[0]}"
            raise LoweringFailed(f"{name}: torch lowering failed: {detail}") from err
    raise AssertionError("unreachable")  # pragma: no cover


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
        parts = tuple(lower_module(make().eval(), *inputs, name=f"{name}.{label}")
                      for label, make, inputs in regional_parts(plan, dtype))
    module, params, buffers = compose_regional(
        *(p.module for p in parts), plan.layers, tuple(len(p.param_args) for p in parts), int(cfg.tie_embeddings),
        n_state=tuple(p.state_args for p in parts),
    )
    stages = {stage: "\n".join(f"// ---- {p.name}\n{p.stages[stage]}" for p in parts) for stage in ("fx", "stablehlo")}
    return dataclasses.replace(parts[1], name=name, stages=stages, module=verify(module), param_args=params, buffer_args=buffers)
