"""The first step of the PyTorch path: torch.export's ATen FX graph, then torch-mlir's StableHLO.

lower.py turns the StableHLO into a Lowering; regional.py runs these two steps per layer region.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings

import torch
from torch import nn

from reference.errors import LoweringFailed


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


def eval_note(module: nn.Module) -> tuple[str, ...]:
    """A note when the module is in training mode and holds layers that behave differently in it."""
    layers = sorted({type(m).__name__ for m in module.modules() if m.training and isinstance(m, MODE_DEPENDENT)})
    if not layers:
        return ()
    verb = "behaves" if len(layers) == 1 else "behave"
    return (
        f"the module is in training mode ({', '.join(layers)} {verb} differently in it): it was lowered in "
        "eval mode, as inference runs it; call .eval() first to make that explicit",
    )


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
    from pytorch_side.static_experts import static_experts
    from reference.errors import DATA_DEPENDENT, CaptureFailed

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
        raise LoweringFailed(
            f"{name}: torch lowering failed: {type(err).__name__}: {str(err).splitlines()[0]}"
        ) from err
    if notes is not None:
        notes.extend(swapped)
    left_out = ", ".join(f"{path} ({kind})" for path, kind in dropped.items())
    if not exported.graph_signature.output_specs:
        raise LoweringFailed(
            f"{name}: the module returns no tensor ({left_out or 'nothing'}); return tensors, or for "
            "a Hugging Face model pass use_cache=False (its cache is an object, not a tensor)"
        )
    if left_out and notes is not None:
        notes.append(
            f"outputs that are not tensors were left out of the lowered program: {left_out} "
            "(for a Hugging Face model, use_cache=False does not build the cache at all)"
        )
    return exported


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
                notes = (
                    f"torch-mlir's decompositions left a view on a non-contiguous tensor; the graph's {n} views "
                    "were lowered as reshapes (the same values)",
                )
                continue
            cause = root_cause("".join(diagnostics))
            detail = f"torch-mlir: {cause}" if cause else f"{type(err).__name__}: {str(err).splitlines()[0]}"
            raise LoweringFailed(f"{name}: torch lowering failed: {detail}") from err
    raise AssertionError("unreachable")  # pragma: no cover
