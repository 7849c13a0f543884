"""Hugging Face's fused MoE experts (Mixtral's `MixtralExperts`, and any module of the same
layout) swapped, for lowering only, for a routed, statically shaped form.

HF's experts cannot be exported: the default loop over the experts that were hit guards on
data (`GuardOnDataDependentSymNode`), and `grouped_mm` counts tokens per expert with
`aten.histc`, which torch-mlir does not legalize. The form lowered instead is the catalogue's
routed dispatch (reference/catalogue/mlp.py `expert_capacity`): with T tokens, n experts and
top k, `active` experts each gather `capacity` rows (top-k of their routing weight), run
gate/up/down and scatter-add back, so a step computes about T * k expert rows: top_k / n of
dense dispatch. The costed program is that one; the module's own forward runs everything else.

The experts' weights are stacked, so the active ones run together, as capacity-based dispatch
runs them (GShard's and Switch's einsums over the expert dimension, a serving engine's grouped
GEMM): one gather of the [active, capacity] rows, one batched matmul per projection over
gate_up_proj[:active] and down_proj[:active] (a contiguous slice, read in place:
hardware_models/values.py contiguous_slice), one weighted scatter-add. A loop over the experts
would lower to five kernels per expert: 7,200 in Qwen1.5-MoE-A2.7B's prefill of 128 tokens
(24 layers x 60 experts), 20 ms of fixed kernel costs on an H100 against 10 ms of streaming its
28.6 GB of weights. Routed over every expert and token (active = n, capacity = T) it computes
what the module's own forward does (tests/sides/test_hf_lowering.py).

The layout recognised (transformers 5): parameters `gate_up_proj` [n, 2F, D] (gate rows, then
up rows) and `down_proj` [n, D, F], an `act_fn`, and forward(hidden [T, D], top_k_index [T, k],
top_k_weights [T, k]).
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from reference.catalogue.mlp import expert_capacity


def _fused_experts(module: nn.Module) -> bool:
    up, down = getattr(module, "gate_up_proj", None), getattr(module, "down_proj", None)
    if not (isinstance(up, nn.Parameter) and isinstance(down, nn.Parameter) and up.ndim == down.ndim == 3):
        return False
    n, two_f, d = up.shape
    return down.shape == (n, d, two_f // 2) and two_f % 2 == 0 and callable(getattr(module, "act_fn", None))


def routed_forward(module: nn.Module):
    """The static routed form of a fused-experts module's forward (module doc): the `active`
    experts run as one batched matmul per projection over their [active, capacity] gathered rows."""

    def forward(hidden_td, top_k_index, top_k_weights):
        (tokens, d), n = hidden_td.shape, module.gate_up_proj.shape[0]
        weights_te = torch.zeros(tokens, n, dtype=top_k_weights.dtype).scatter(1, top_k_index, top_k_weights)
        active, capacity = expert_capacity(tokens, n, top_k_index.shape[1])
        weight_ec, rows_ec = torch.topk(weights_te[:, :active].T, capacity, dim=-1)  # each expert's top rows
        rows = rows_ec.reshape(-1)
        x_ecd = hidden_td.index_select(0, rows).reshape(active, capacity, d)
        gate, up = torch.bmm(x_ecd, module.gate_up_proj[:active].transpose(1, 2)).chunk(2, dim=-1)
        y_ecd = torch.bmm(module.act_fn(gate) * up, module.down_proj[:active].transpose(1, 2))
        y = (weight_ec[..., None] * y_ecd).to(hidden_td.dtype).reshape(active * capacity, d)
        return torch.zeros_like(hidden_td).index_add(0, rows, y)

    return forward


@contextlib.contextmanager
def static_experts(module: nn.Module, notes: list[str] | None = None):
    """Every fused-experts submodule runs the routed form inside the block (its own forward
    after); a note names the modules swapped."""
    swapped = [(path, m) for path, m in module.named_modules() if _fused_experts(m)]
    for _, m in swapped:
        m.forward = routed_forward(m)
    if swapped and notes is not None:
        kinds = sorted({type(m).__name__ for _, m in swapped})
        notes.append(
            f"{len(swapped)} {', '.join(kinds)} module(s) were lowered in a routed, statically shaped form "
            "(the experts' data-dependent dispatch does not export): each active expert runs its share of "
            "the tokens, top_k / n_experts of dense (reference/catalogue/mlp.py expert_capacity), the "
            "active experts together in one batched matmul per projection"
        )
    try:
        yield
    finally:
        for _, m in swapped:
            del m.forward
