"""Lowering users' modules regionally (pytorch_side/regional.py) and HF's MoE experts in their
static routed form (pytorch_side/static_experts.py).

What is proved: a module's regional lowering is the same program as its flat lowering, counted
(every contraction the same, executed as often; the weights' bytes the same; total FLOPs within
0.1%: the flat program computes loop-invariant scalars and masks once for all layers, the layer
function once per call); HF's Mixtral lowers, and its experts cost what the catalogue's routed
MoE costs for the same config; HF's Qwen2-MoE streams its experts' weights once, in a number of
kernels that does not grow with its experts, and its routed form computes what HF's experts do;
what cannot be cut is refused in one line; torch.export's assertions (no-ops, often without the
layer's annotation) are not ops of the module's own, and HF's Gemma-2 lowers regionally.
"""

from __future__ import annotations

from collections import Counter

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="the [hf] extra (transformers) is not installed")

from torch import nn  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from pytorch_side.lower import lower_module  # noqa: E402
from pytorch_side.regional import REGION, _parts, find_stack  # noqa: E402
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
    assert [regional.module.main.arg_names[i] for i in regional.param_args][0].endswith(
        ("embed_tokens.weight", "wte.weight")
    )


def test_mixtral_experts_cost_the_catalogue_routed_moe():
    """HF's Mixtral, lowered with its experts in the static routed form, has the FLOPs of our own
    decoder for the same config (whose MoE is costed routed): expert rows top_k / n of dense."""
    from pytorch_side.layers import Decoder, routed_moe
    from reference.hf_config import config_from_hf

    hf_cfg = CONFIGS["mixtral"]()
    ours = config_from_hf(hf_cfg.to_dict(), "hf-mixtral")
    with FakeTensorMode(allow_non_fake_inputs=True):
        hf = lower_module(
            getattr(transformers, CLASSES["mixtral"])(hf_cfg).eval(),
            torch.empty((2, 8), dtype=torch.int64),
            regional=True,
        )
        with routed_moe():
            mine = lower_module(
                Decoder(ours, torch.float32).eval(), torch.empty((2, 8), dtype=torch.int32), regional=True
            )
    assert any("routed, statically shaped form" in n for n in hf.notes)
    hf_dots = {k[1]: v for k, v in executed(hf.module).items() if k[0] == "stablehlo.dot_general"}
    our_dots = {k[1]: v for k, v in executed(mine.module).items() if k[0] == "stablehlo.dot_general"}
    # every expert's gate/up [capacity, 2F] and down [capacity, D] rows: 16 tokens, top 2 of 4 -> 4 experts x 8 rows;
    # HF's stacked experts run as one batched matmul per projection and layer, ours as one per expert
    assert hf_dots.get("f32[4,8,192]") == 2 and our_dots.get("f32[8,96]") == 2 * 2 * 4
    a, b = module_stats(hf.module).flops, module_stats(mine.module).flops
    assert abs(a - b) <= 0.02 * b, (a, b)


def qwen2_moe(experts: int):
    """A small Qwen2-MoE (Qwen1.5-MoE-A2.7B's layout: top 4 of n fused experts and a gated shared expert)."""
    return transformers.Qwen2MoeConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=128,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=128,
        num_experts=experts,
        num_experts_per_tok=4,
        vocab_size=256,
        max_position_embeddings=64,
    )


def qwen2_moe_cost(experts: int, tokens: int) -> tuple[int, int, int]:
    """(parameter bytes, main-memory bytes, kernels run) of a prefill of `tokens` on an H100."""
    from hardware_models.estimate import estimate

    with FakeTensorMode(allow_non_fake_inputs=True):
        torch.set_default_dtype(torch.bfloat16)
        try:
            model = transformers.Qwen2MoeForCausalLM(qwen2_moe(experts)).eval()
        finally:
            torch.set_default_dtype(torch.float32)
        lowering = lower_module(model, torch.empty((1, tokens), dtype=torch.int64), regional=True)
    est = estimate(lowering, "h100")
    return lowering.stats().param_bytes, est.total.bytes_at("hbm"), sum(g.repeats for g in est.groups)


def test_qwen2_moe_experts_stream_their_weights_once_in_a_fixed_number_of_kernels():
    """32 tokens, top 4 of 8 or of 32 experts: every expert is hit (expert_capacity), and the step's
    main-memory bytes grow by the added experts' weights once (not the 3x of a copied slice of each
    expert read again by its matmul), in as many kernels (one batched matmul per projection and
    layer, not one per expert). Qwen1.5-MoE-A2.7B at 128 tokens on an H100 was 50 ms for that."""
    (p8, hbm8, kernels8), (p32, hbm32, kernels32) = qwen2_moe_cost(8, 32), qwen2_moe_cost(32, 32)
    assert p32 - p8 <= hbm32 - hbm8 <= 1.1 * (p32 - p8), (hbm8, hbm32)
    assert kernels32 == kernels8


def test_one_token_reads_its_four_experts_in_place_of_the_stacked_experts():
    """One token, top 4 of 32: the 4 experts it is expected to choose are a contiguous slice of the
    stacked weights, read in place by the batched matmul (values.contiguous_slice), so the step moves
    what top 4 of 4 moves plus the larger router's weights (28 more rows of 64, 2 layers)."""
    (_, hbm4, kernels4), (_, hbm32, kernels32) = qwen2_moe_cost(4, 1), qwen2_moe_cost(32, 1)
    router = 28 * 64 * 2 * 2
    assert router <= hbm32 - hbm4 <= router + 1024, (hbm4, hbm32)
    assert kernels32 == kernels4


def test_the_routed_form_over_every_expert_and_token_computes_what_hfs_experts_do(monkeypatch):
    """The batched routed form (pytorch_side/static_experts.py) with every expert taking every
    token equals Qwen2-MoE's own experts' forward: same gather, matmuls and weighted scatter-add."""
    import pytorch_side.static_experts as static

    cls = transformers.models.qwen2_moe.modeling_qwen2_moe.Qwen2MoeExperts
    config = qwen2_moe(8)
    config._experts_implementation = "eager"
    torch.manual_seed(0)
    experts = cls(config)
    for p in experts.parameters():
        nn.init.normal_(p, std=0.2)
    hidden = torch.randn(19, 64)
    weights, index = torch.topk(torch.randn(19, 8).softmax(-1), 4, dim=-1)
    monkeypatch.setattr(static, "expert_capacity", lambda tokens, n, k: (n, tokens))
    with torch.no_grad():
        torch.testing.assert_close(
            static.routed_forward(experts)(hidden, index, weights), experts(hidden, index, weights)
        )


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
    with (
        FakeTensorMode(allow_non_fake_inputs=True),
        pytest.raises(LoweringFailed, match=r"lower it flat \(regional=False\)"),
    ):
        lower_module(Stack(3, between=torch.tanh), torch.empty((2, 7, 32)), regional=True)


def _layer_graph(unmarked: str):
    """A traced graph of mul, an assertion on its result, add, mul: each op marked as layer 0's but `unmarked`."""

    def layer(x):
        a = x * 2
        torch.ops.aten._assert_tensor_metadata.default(a, dtype=torch.float32)
        return (a + 1) * 3

    graph = torch.fx.symbolic_trace(layer).graph
    for node in graph.nodes:
        if node.op == "call_function" and node.name != unmarked:
            node.meta["custom"] = {REGION: 0}
    return graph


def test_an_assertion_inside_the_layer_is_no_op_of_the_modules_own():
    """torch.export adds its assertions without the layer's annotation: one inside the layer is let
    through (it is in the layer's part, and dropped before the split); an add of the module's own is not."""
    assert set(_parts(_layer_graph("_assert_tensor_metadata_default")).values()) == {1}
    with pytest.raises(LoweringFailed, match=r"inside the layer's \(add\); lower it flat \(regional=False\)"):
        _parts(_layer_graph("add"))


def test_an_assertion_between_layers_is_no_op_of_the_modules_own():
    """A module's own assertion between its layers lowers regionally, as the same program as flat."""

    def check(x):
        torch.ops.aten._assert_tensor_metadata.default(x, dtype=x.dtype)
        return x

    with FakeTensorMode(allow_non_fake_inputs=True):
        flat, regional = both(Stack(3, between=check), torch.empty((2, 7, 32)))
    assert_same_program(flat, regional, 3, transcendentals=False)
    assert "_assert_tensor_metadata" in flat.stages["fx"] and "_assert_tensor_metadata" not in regional.stages["fx"]


def test_hf_gemma2_lowers_regionally_as_its_flat_program():
    """Gemma-2's RMSNorm casts its weight (`self.weight.float()`): torch.export's unannotated
    _assert_tensor_metadata inside the layer refused it. Transcendentals are left out as for the
    course block: the tanh GELU's sqrt(2 / pi) is computed once flat and once per call. Its layers
    alternate sliding-window and full attention masks, which the lowered layer cannot: a note says so."""
    cfg = transformers.Gemma2Config(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        vocab_size=128,
        max_position_embeddings=64,
        sliding_window=16,
        use_cache=False,
    )
    with FakeTensorMode(allow_non_fake_inputs=True):
        flat, regional = both(transformers.Gemma2ForCausalLM(cfg).eval(), torch.empty((2, 8), dtype=torch.int64))
    assert_same_program(flat, regional, 2, transcendentals=False)
    assert "assert" not in regional.stages["stablehlo"] and not regional.stats().unknown_ops
    assert any("read different tensors computed before the stack" in n for n in regional.notes)
    assert not any("read different tensors" in n for n in flat.notes)
