"""The PyTorch side of the debugger's ladder: one case run eagerly (R1), captured by torch.export
and replayed through `torch.fx.Interpreter` (R2), and lowered through torch-mlir with the
case's own arrays as the program's arguments (R3 onwards).

Capture runs on the case's real module and real inputs, so the replay can be fed fresh inputs
(a different seed) that the capture never saw. A capture failure is a `CaptureFailed` naming the
user's line (reference.errors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pytorch_side.export import export_module
from pytorch_side.graph_ops import graph_ops
from pytorch_side.kernels import build
from pytorch_side.lower import lower_exported
from pytorch_side.params import load_weights, to_numpy, to_torch
from pytorch_side.run import run_module
from reference.inputs import Case
from reference.lowering import Lowering


@dataclass
class Captured:
    """A case's module, its exported program and its lowering; `arguments` feeds the IR."""

    module: torch.nn.Module
    exported: object
    lowering: Lowering

    @property
    def ops(self) -> list[tuple[str, str, str]]:
        return graph_ops(self.exported)

    def state(self) -> list[np.ndarray]:
        return [
            to_numpy(t)
            for t in (*dict(self.module.named_parameters()).values(), *dict(self.module.named_buffers()).values())
        ]

    def arguments(self, case: Case) -> list[np.ndarray]:
        """The IR's arguments for `case`: weights, buffers, then the inputs."""
        return [*self.state(), *case.inputs.values()]

    def eager(self, case: Case) -> tuple[np.ndarray, ...]:
        """R1 of the captured module (its weights) on `case`'s inputs: what the replay must equal."""
        return run_module(self.module, *case.inputs.values())

    def replay(self, case: Case) -> tuple[np.ndarray, ...]:
        """R2: the captured FX graph run by torch.fx.Interpreter on `case`'s inputs."""
        state = {**dict(self.module.named_parameters()), **dict(self.module.named_buffers())}
        graph = self.exported.module()
        with torch.inference_mode():
            out = graph(state, *(to_torch(x) for x in case.inputs.values()))
        out = out if isinstance(out, (tuple, list)) else (out,)
        return tuple(to_numpy(o).astype(np.float64) for o in out)


def recapture_ops(case: Case, module: torch.nn.Module | None = None) -> list[tuple[str, str, str]]:
    """torch.export the case's module once more (without lowering): its graph's ops (graph_ops).

    Raises:
        CaptureFailed, LoweringFailed: as `capture`.
    """
    module = module_for(case, module).eval()
    return graph_ops(export_module(module, *(to_torch(x) for x in case.inputs.values()), name=case.entry.name))


def module_for(case: Case, module: torch.nn.Module | None = None) -> torch.nn.Module:
    """The case's module with its weights loaded (or the module given, as it is)."""
    return (
        module
        if module is not None
        else load_weights(build(case.entry.name, case.shapes, case.dtype), dict(case.weights))
    )


def eager(case: Case, module: torch.nn.Module | None = None) -> tuple[np.ndarray, ...]:
    """R1: the module run eagerly on the case's inputs."""
    return run_module(module_for(case, module), *case.inputs.values())


def capture(case: Case, module: torch.nn.Module | None = None) -> Captured:
    """torch.export the case's module at its real inputs (once), and lower that through torch-mlir.

    Raises:
        CaptureFailed: torch.export could not capture forward (data-dependent control flow, a
            host sync such as `.item()`); the message names the user's line and the fix.
        LoweringFailed: any other export failure, or torch-mlir could not lower the graph.
    """
    module = module_for(case, module).eval()
    inputs = tuple(to_torch(x) for x in case.inputs.values())
    exported = export_module(module, *inputs, name=case.entry.name)
    return Captured(module, exported, lower_exported(exported, module, len(inputs), case.entry.name))
