"""What a lowering produced: the framework's own stages as text, and the IR built from them.

Both sides return this type (pytorch_side.lower, jax_side.lower), so the CLI, the diff and
the hardware models read one shape of result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference.errors import UnknownName
from reference.ir import Module, Stats, module_stats, print_module

STAGES = {
    "torch": ("fx", "stablehlo", "ir"),
    "jax": ("jaxpr", "stablehlo", "ir", "xla"),
    "torch-xla": ("stablehlo", "ir", "xla"),
}


@dataclass(frozen=True)
class Lowering:
    """One program lowered by one side.

    Attributes:
        side: "torch" or "jax".
        name: the catalogue entry or a user label.
        stages: stage name -> text (fx or jaxpr, stablehlo, and for JAX the optimized xla HLO).
        module: the IR built from the StableHLO text.
        param_args: indices of the entry function's arguments that are weights.
        buffer_args: indices of the arguments that are the module's buffers (constants it holds,
            such as Rotary's `inv_freq`): state like the weights, right after them, never
            activations, and not counted as weight bytes.
        xla_cost: JAX only: XLA's cost_analysis of the lowered (unoptimized) module, and of the
            compiled one under "compiled." keys when the xla stage was requested.
        notes: what the lowering changed or left out of the user's program (a module in
            training mode lowered in eval mode; outputs that are not tensors).
    """

    side: str
    name: str
    stages: dict[str, str]
    module: Module
    param_args: tuple[int, ...] = ()
    xla_cost: dict = field(default_factory=dict)
    buffer_args: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def state_args(self) -> int:
        """How many leading arguments are the module's state (weights, then buffers)."""
        return len(self.param_args) + len(self.buffer_args)

    def stage(self, stage: str) -> str:
        """The text of one stage; "ir" prints the IR.

        Raises:
            UnknownName: a stage this side does not have (or that was not requested).
        """
        if stage == "ir":
            return print_module(self.module)
        if stage not in self.stages:
            raise UnknownName(f"stage for the {self.side} side", stage, [*self.stages, "ir"])
        return self.stages[stage]

    def stats(self, policy: str = "trip_count") -> Stats:
        return module_stats(self.module, self.param_args, policy)
