"""Your own PyTorch module, lowered and costed without a byte of weights: built under FakeTensorMode.

    .venv/bin/python examples/fake_module.py     # about 6 s here, most of it importing torch-mlir

Under FakeTensorMode every parameter is a FakeTensor: a shape and a dtype, no storage, so a layer
of a 70B model costs nothing to build. Two rules:
- set the dtype *before* construction (torch.set_default_dtype); the parameters are made in it.
  `.to(torch.bfloat16)` inside the mode fails ("_apply(): Couldn't swap Linear.weight"): the
  module would have to swap its fake parameters for converted ones, which FakeTensorMode refuses;
- make the inputs inside the mode too (torch.empty(...) is fake there), and restore the default
  dtype after, so the rest of the program is not in bfloat16.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402


class MLP(torch.nn.Module):
    """One feed-forward block at Llama-3.1-70B's width (d 8192, d_ff 28672), GELU for brevity."""

    def __init__(self, d: int = 8192, d_ff: int = 28672):
        super().__init__()
        self.up = torch.nn.Linear(d, d_ff, bias=False)
        self.down = torch.nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def build(tokens: int = 128, dtype: torch.dtype = torch.bfloat16):
    """(module, input), both fake, in `dtype`."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # before construction: the parameters are made in it
    try:
        with FakeTensorMode():
            model = MLP()
            x = torch.empty(1, tokens, 8192)
    finally:
        torch.set_default_dtype(previous)
    return model, x


def main() -> None:
    from hardware_models.estimate import estimate
    from hardware_models.pipelines import compile_plan
    from hardware_models.target import get_target
    from pytorch_side.lower import lower_module
    from reference.units import format_bytes, format_seconds

    model, x = build()
    lowering = lower_module(model, x, name="mlp")  # torch.export -> torch-mlir -> StableHLO -> our IR
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    print(
        f"mlp: {format_bytes(weights)} of fake {model.up.weight.dtype} weights, {len(lowering.module.main.ops)} IR ops"
    )
    for name in ("h100", "tpu-v5e"):
        target = get_target(name)
        est = estimate(lowering.module, target, "mlp", compile_plan(lowering.module, target))
        print(f"  {name}: {format_seconds(est.total.time_s)}, {est.bottleneck}-bound")


if __name__ == "__main__":
    main()
