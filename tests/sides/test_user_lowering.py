"""Lowering a user's own nn.Module robustly: training mode, outputs that are not tensors, and
torch-mlir's root cause kept when it cannot lower an op (pytorch_side/lower.py, diagnostics.py)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from pytorch_side.diagnostics import root_cause
from reference.errors import LoweringFailed


def test_the_root_cause_is_the_first_error_its_aten_op_and_the_users_line():
    diagnostics = (
        "some warning\n"
        'loc(callsite("/home/me/model.py":6:0 at "/x/pytorch_side/lower.py":37:0)): error: failed to legalize '
        "operation 'torch.operator' that was explicitly marked illegal: %6 = \"torch.operator\"(%arg0) "
        '<{name = "torch.aten.histc"}> : (!torch.vtensor<[8],f32>) -> !torch.vtensor<[4],f32>\n'
        'loc("/home/me/model.py":9:0): error: a second error\n'
    )
    assert root_cause(diagnostics) == (
        "failed to legalize operation 'torch.operator' that was explicitly marked "
        "illegal (torch.aten.histc) at /home/me/model.py:6"
    )
    assert root_cause("no errors here\n") is None
    assert root_cause("loc(unknown): error: something broke: %1 = x") == "something broke"


@pytest.mark.torch
def test_an_op_torch_mlir_lacks_is_named_with_the_users_source_line():
    import torch

    from pytorch_side.lower import lower_module

    class Histogram(torch.nn.Module):
        def forward(self, x):
            return x * 2 + torch.histc(x, bins=4, min=0, max=4).sum()

    line = inspect.getsourcelines(Histogram.forward)[1] + 1
    with pytest.raises(LoweringFailed) as info:
        lower_module(Histogram(), torch.randn(8), name="hist")
    message = str(info.value)
    assert message.count("\n") == 0 and "torch.aten.histc" in message and "failed to legalize" in message
    assert f"{__file__}:{line}" in message


@pytest.mark.torch
def test_a_module_in_training_mode_is_lowered_in_eval_mode_with_a_note_and_keeps_its_mode():
    import torch

    from pytorch_side.lower import lower_module

    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(0.1), torch.nn.Linear(16, 4))
    assert model.training
    lowering = lower_module(model, torch.empty(2, 16), name="mlp")
    assert not any("rng" in op.short_name for op in lowering.module.main.ops)  # dropout is off
    assert any("training mode" in note for note in lowering.notes)
    assert model.training and model[1].training  # the user's module is as it was
    assert lower_module(model.eval(), torch.empty(2, 16)).notes == ()


@pytest.mark.torch
def test_outputs_that_are_not_tensors_are_left_out_with_a_note_and_none_at_all_is_refused():
    import torch

    from pytorch_side.lower import lower_module

    class Cache:  # like transformers' DynamicCache: an object holding tensors, not a tensor
        def __init__(self, k):
            self.k = k

    @dataclasses.dataclass
    class Output:
        logits: torch.Tensor
        hidden: torch.Tensor

    class WithCache(torch.nn.Module):
        def forward(self, x):
            return {"logits": x * 2, "past_key_values": Cache(x + 1), "attentions": None}

    class WithDataclass(torch.nn.Module):
        def forward(self, x):
            return Output(x * 2, x + 1)

    class OnlyCache(torch.nn.Module):
        def forward(self, x):
            return Cache(x)

    lowering = lower_module(WithCache(), torch.empty(3, 5))
    assert len(lowering.module.main.results) == 1
    (note,) = lowering.notes
    assert "output.past_key_values (Cache)" in note and "use_cache=False" in note
    assert len(lower_module(WithDataclass(), torch.empty(3, 5)).module.main.results) == 2
    with pytest.raises(LoweringFailed, match="returns no tensor.*use_cache=False"):
        lower_module(OnlyCache(), torch.empty(3, 5), name="cache-only")
