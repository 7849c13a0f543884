"""Lowering users' modules regionally (pytorch_side/regional.py) and HF's MoE experts in their
static routed form (pytorch_side/static_experts.py).

What is proved: a module's regional lowering is the same program as its flat lowering, counted
(every contraction the same, executed as often; the weights' bytes the same; total FLOPs within
0.1%: the flat program computes loop-invariant scalars and masks once for all layers, the layer
function once per call); HF's Mixtral lowers, and its experts cost what the catalogue's routed
MoE costs for the same config; what cannot be cut is refused in one line.
"""

from __future__ import annotations

from collections import Counter

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="the [hf] extra (transformers) is not installed")

from torch import nn  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from pytorch_side.lower import lower_module  # noqa: E402
from pytorch_side.regional import find_stack  # noqa: E402
from reference.errors import LoweringFailed  # noqa: E402
from reference.ir.counters import module_stats  # noqa: E402
from tests.sides.test_hf_models import CLASSES, CONFIGS  # noqa: E402

pytestmark = [pytest.mark.torch]


def executed(module) -> Counter:
    """(op, result type) -> times executed: a call's body counted trip_count times."""
    counts: Counter = Counter()

    def walk(fn, times):
        for op in fn.ops:
            if op.short_name == "call":
                walk(module.function(op.callee), times * (op.trip_count or 1))
            elif op.short_name != "return":
                counts[(op.name, str(op.result_types[0]) if op.result_types else "")] += times

    walk(module.main, 1)
    return counts


def both(model, *inputs):
    flat = lower_module(model, *inputs, name="flat")
    regional = lower_module(model, *inputs, name="regional", regional=True)
    return flat, regional


def assert_same_program(flat, regional, layers: int, transcendentals: bool = True):
    a, b = executed(flat.module), executed(regional.module)
    dots = lambda c: {k: v for k, v in c.items() if k[0] == "stablehlo.dot_general"}  # noqa: E731
    assert dots(a) == dots(b) and dots(a)
    sa, sb = module_stats(flat.module, flat.param_args), module_stats(regional.module, regional.param_args)
    assert sb.param_bytes == sa.param_bytes
    if transcendentals:
        assert sb.transcendentals == sa.transcendentals
    assert abs(sb.flops - sa.flops) <= 1e-3 * sa.flops
    (call,) = [op for op in regional.module.main.ops if op.short_name == "call"]
    assert call.trip_count == layers
    assert any("lowered regionally" in n for n in regional.notes)


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_hf_model_regional_equals_flat(kind):
    cfg = CONFIGS[kind]()
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = getattr(transformers, CLASSES[kind])(cfg).eval()
        flat, regional = both(model, torch.empty((2, 8), dtype=torch.int64))
    assert_same_program(flat, regional, 2)
    assert [regional.module.main.arg_names[i] for i in regional.param_args][0].endswith(("embed_tokens.weight", "wte.weight"))


def test_mixtral_experts_cost_the_catalogue_routed_moe():
    """HF's Mixtral, lowered with its experts in the static routed form, has the FLOPs of our own
    decoder for the same config (whose MoE is costed routed): expert rows top_k / n of dense."""
    from pytorch_side.layers import Decoder, routed_moe
    from reference.hf_config import config_from_hf

    hf_cfg = CONFIGS["mixtral"]()
    ours = config_from_hf(hf_cfg.to_dict(), "hf-mixtral")
    with FakeTensorMode(allow_non_fake_inputs=True):
        hf = lower_module(getattr(transformers, CLASSES["mixtral"])(hf_cfg).eval(), torch.empty((2, 8), dtype=torch.int64),
                          regional=True)
        with routed_moe():
            mine = lower_module(Decoder(ours, torch.float32).eval(), torch.empty((2, 8), dtype=torch.int32), regional=True)
    assert any("routed, statically shaped form" in n for n in hf.notes)
    hf_dots = {k[1]: v for k, v in executed(hf.module).items() if k[0] == "stablehlo.dot_general"}
    our_dots = {k[1]: v for k, v in executed(mine.module).items() if k[0] == "stablehlo.dot_general"}
    # every expert's gate/up [capacity, 2F] and down [capacity, D] rows: 16 tokens, top 2 of 4 -> 4 experts x 8 rows
    assert hf_dots.get("f32[8,192]") == 2 * 4 and our_dots.get("f32[8,96]") == 2 * 2 * 4
    a, b = module_stats(hf.module).flops, module_stats(mine.module).flops
    assert abs(a - b) <= 0.02 * b, (a, b)


class CourseBlock(nn.Module):
    """A course-style block: LayerNorm, multi-head attention, GELU MLP."""

    def __init__(self, d: int = 32, heads: int = 4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Stack(nn.Module):
    def __init__(self, layers: int, between=None):
        super().__init__()
        self.blocks = nn.ModuleList(CourseBlock() for _ in range(layers))
        self.head = nn.Linear(32, 8)
        self.between = between

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
            if self.between is not None:
                x = self.between(x)
        return self.head(x)


@pytest.mark.parametrize("layers", [2, 5])
def test_users_module_regional_equals_flat(layers):
    """Transcendentals are left out here: torch-mlir writes nn.GELU's 1/sqrt(2) as an rsqrt of a
    broadcast constant, which the flat program computes once for all layers (one loop-invariant
    value) and the layer function once per call."""
    with FakeTensorMode(allow_non_fake_inputs=True):
        flat, regional = both(Stack(layers), torch.empty((2, 7, 32)))
    assert_same_program(flat, regional, layers, transcendentals=False)


def test_stack_choice():
    """The longest list of identical layers; lists of differing layers, or of one, are no stack."""
    assert find_stack(Stack(3))[0] == "blocks"
    mixed = nn.Module()
    mixed.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 5)])
    mixed.one = nn.ModuleList([nn.Linear(4, 4)])
    assert find_stack(mixed) is None
    with pytest.raises(LoweringFailed, match="needs an nn.ModuleList of two or more identical layers"):
        lower_module(nn.Linear(4, 4), torch.zeros(2, 4), regional=True)


def test_ops_between_layers_are_refused():
    """An op of the module's own between two layers cannot be cut around one layer: one line, and the fix."""
    with FakeTensorMode(allow_non_fake_inputs=True), pytest.raises(LoweringFailed, match=r"lower it flat \(regional=False\)"):
        lower_module(Stack(3, between=torch.tanh), torch.empty((2, 7, 32)), regional=True)
