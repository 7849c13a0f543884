"""The PyTorch side of a training step (pytorch_side/train.py): each part's forward and backward
lowered through AOTAutograd and torch-mlir into the IR, checked by its structure (a gradient for
every weight, the backward's matmuls, recomputation's copies), by running the IR against eager
autograd and torch.optim.AdamW, and by what the forward saves against hand counts.
"""

from __future__ import annotations

import collections
import resource
import time

import numpy as np
import pytest

from reference.ir import TensorType, verify
from reference.ir.counters import all_ops
from reference.models import get_model

pytestmark = [pytest.mark.torch]

CFG = get_model("tiny")  # d_model 64, 4 heads over 2 KV heads of 16, d_ff 128, vocab 256
BATCH, SEQ = 1, 65


def _dots(module, function: str | None = None) -> int:
    fns = module.functions if function is None else (module.function(function),)
    return sum(op.short_name == "dot_general" for fn in fns for op in fn.ops)


def _block_step(cfg, batch, seq, dtype, recompute):
    """(Lowering, saved bytes) of one block's step, as lower_train_parts lowers it."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from pytorch_side.kernels import TORCH_DTYPES
    from pytorch_side.layers import Block
    from pytorch_side.train import lower_train_part

    dt = TORCH_DTYPES[dtype]
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.empty((batch, seq, cfg.d_model), dtype=dt)
        return lower_train_part(
            Block(cfg, dt), [x], (True,), f"{cfg.name}.block", select=lambda out: out[0], recompute=recompute
        )


@pytest.fixture(scope="module")
def parts():
    from pytorch_side.train import lower_train_parts

    return lower_train_parts(CFG, BATCH, SEQ, "float32", "none")


@pytest.fixture(scope="module")
def blocks(parts):
    """recompute mode -> (block Lowering, saved bytes), float32."""
    out = {"none": (parts.parts["block"], parts.saved_bytes["block"])}
    for mode in ("selective", "full"):
        out[mode] = _block_step(CFG, BATCH, SEQ, "float32", mode)
    return out


def test_every_part_and_update_lowers_to_verified_ir(parts):
    assert (parts.side, parts.model, parts.batch, parts.seq, parts.recompute) == ("torch", "tiny", 1, 65, "none")
    assert set(parts.parts) == set(parts.optimizer) == set(parts.saved_bytes) == {"prologue", "block", "epilogue"}
    for lowering in (*parts.parts.values(), *parts.optimizer.values()):
        verify(lowering.module)
        assert lowering.side == "torch" and lowering.param_args
        assert len(lowering.module.main.arg_names) == len(lowering.module.main.args)


@pytest.mark.parametrize("part", ["prologue", "block", "epilogue"])
def test_a_part_returns_its_output_then_a_gradient_for_every_activation_and_weight(parts, part):
    """prologue (table, ids, dy) -> (x, d table); block (weights, inv_freq, x, dy) -> (y, dx, d weights);
    epilogue (weights, x, labels) -> (loss, dx, d weights): the loss's cotangent is 1, no argument."""
    lowering = parts.parts[part]
    args = [t for _, t in lowering.module.main.args]
    assert len(args) == lowering.state_args + 2
    weights = [args[i] for i in lowering.param_args]
    x = TensorType((BATCH, SEQ, CFG.d_model), "f32")
    assert args[lowering.state_args] == (TensorType((BATCH, SEQ), "i32") if part == "prologue" else x)
    output = {"prologue": [x], "block": [x, x], "epilogue": [TensorType((), "f32"), x]}[part]
    assert list(lowering.module.main.results) == output + weights


def test_the_block_backward_holds_twice_the_forward_matmuls_and_the_attention_recomputes_its_scores(parts):
    """The forward is inference's (the same matmul FLOPs as pytorch_side.lower's block); the
    backward has two matmuls per linear (dx, dW) and FlashAttention's five (the scores again,
    dV, dP, dQ, dK), so the step's matmul FLOPs are about 3x the forward's."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from pytorch_side.layers import Block
    from pytorch_side.lower import lower_module
    from reference.ir import dot_and_conv_flops

    block = parts.parts["block"].module
    with FakeTensorMode(allow_non_fake_inputs=True):
        inference = lower_module(Block(CFG, torch.float32).eval(), torch.empty(BATCH, SEQ, CFG.d_model))
    assert _dots(block, "forward") == _dots(inference.module) == 7 + 2
    assert _dots(block, "backward") == 2 * 7 + 5
    forward_flops = dot_and_conv_flops(inference.module)
    step_flops = dot_and_conv_flops(block)
    assert [c.callee for c in block.main.ops if c.callee] == ["forward", "backward"]
    assert 3.0 < step_flops / forward_flops < 3.5


def test_full_recomputation_runs_the_forward_again_in_the_backward(blocks):
    """The backward of "full" runs the layer's forward matmuls again, all 9 but down_proj's (its
    output, the layer's, is not read), before the backward's 19; the recomputed attention's
    scores and those its backward recomputes are one matmul in one program (torch-mlir's CSE
    merges them), so 9 + 19 - 2. "selective" saves the matmuls' outputs: no matmul runs again."""
    none, selective, full = (blocks[m][0].module for m in ("none", "selective", "full"))
    assert _dots(full, "backward") == 19 + 9 - 2
    assert _dots(selective, "backward") == _dots(none, "backward") == 19  # the matmuls are saved
    ops = [sum(1 for _ in all_ops(m)) for m in (none, selective, full)]
    assert ops == sorted(ops) and len(set(ops)) == 3  # selective recomputes the norms, RoPE, SiLU


def test_saved_bytes_of_a_layer_equal_the_hand_count_in_float32(blocks):
    """What one layer's forward keeps for its backward (AOTAutograd's default partition; weights
    and the rotary buffer held anyway, left out), 4 B an element, per token:

        full        the layer's input x: d
        selective   x; the matmuls' outputs: q (Hq), k and v (2 Hk), o_proj's (d), gate and up
                    (2 F); the attention core's output (Hq) and log-sum-exp (one a head)
        none        per RMSNorm (two): its input, the normalized input and the output (3 d) and
                    rsqrt (1); RoPE's cos and sin for q and k (4 head_dim); the attention core's
                    inputs q, k, v (Hq + 2 Hk), output (Hq) and log-sum-exp (heads); SwiGLU's gate
                    and up outputs, silu(gate) and the product (4 F)
    """
    d, f, hd, heads = CFG.d_model, CFG.d_ff, CFG.head_dim, CFG.n_heads
    hq, hk = heads * hd, CFG.n_kv_heads * hd
    per_token = {
        "full": d,
        "selective": d + hq + 2 * hk + d + 2 * f + hq + heads,
        "none": 2 * (3 * d + 1) + 4 * hd + hq + 2 * hk + hq + heads + 4 * f,
    }
    for mode, elements in per_token.items():
        assert blocks[mode][1] == BATCH * SEQ * elements * 4, mode
    assert blocks["full"][1] < blocks["selective"][1] < blocks["none"][1]


def test_the_other_parts_save_the_ids_and_the_float32_log_softmax(parts):
    """The prologue's backward reads the ids (int32); the epilogue's the norm's input, normalized
    input and output, rsqrt, the float32 log-softmax of the logits, the int64 labels, and the
    loss's normalizer (one float32)."""
    tokens, d, v = BATCH * SEQ, CFG.d_model, CFG.vocab
    assert parts.saved_bytes["prologue"] == tokens * 4
    assert parts.saved_bytes["epilogue"] == tokens * ((3 * d + 1) * 4 + v * 4 + 8) + 4


# ---- the IR run on numbers, against eager autograd and torch.optim


def _randomized(module, seed=0):
    import torch

    torch.manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.2)
    return module


def _close(got, want, rtol=1e-4):
    for g, w in zip(got, want, strict=True):
        w = w.detach().numpy()
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * float(np.abs(w).max()))


@pytest.mark.parametrize("mode", ["none", "selective", "full"])
def test_the_block_step_computes_eager_autograd(blocks, mode):
    import torch

    from pytorch_side.layers import Block
    from reference.ir.interpret import run_module

    block = _randomized(Block(CFG, torch.float32))
    x = torch.randn(BATCH, SEQ, CFG.d_model, requires_grad=True)
    dy = torch.randn(BATCH, SEQ, CFG.d_model)
    y = block(x)[0]
    want = [y, *torch.autograd.grad(y, [x, *block.parameters()], dy)]
    args = [t.detach().numpy() for t in (*block.parameters(), *block.buffers(), x, dy)]
    _close(run_module(blocks[mode][0].module, args), want)


def test_the_prologue_and_epilogue_steps_compute_eager_autograd(parts):
    import torch

    from pytorch_side.layers import Prologue
    from pytorch_side.train import EpilogueLoss
    from reference.ir.interpret import run_module

    prologue = _randomized(Prologue(CFG, torch.float32))
    ids = torch.randint(0, CFG.vocab, (BATCH, SEQ), dtype=torch.int32)
    dy = torch.randn(BATCH, SEQ, CFG.d_model)
    x = prologue(ids)
    want = [x, *torch.autograd.grad(x, list(prologue.parameters()), dy)]
    args = [t.detach().numpy() for t in (*prologue.parameters(), ids, dy)]
    _close(run_module(parts.parts["prologue"].module, args), want)

    epilogue = _randomized(EpilogueLoss(CFG, torch.float32), seed=1)
    x = torch.randn(BATCH, SEQ, CFG.d_model, requires_grad=True)
    labels = torch.randint(0, CFG.vocab, (BATCH, SEQ))
    loss = epilogue(x, labels)
    want = [loss, *torch.autograd.grad(loss, [x, *epilogue.parameters()])]
    args = [t.detach().numpy() for t in (*epilogue.parameters(), x, labels)]
    _close(run_module(parts.parts["epilogue"].module, args), want)


def test_the_update_is_torch_optim_adamw_first_step(parts):
    import torch

    from reference.ir.interpret import run_module
    from reference.training import ADAMW

    torch.manual_seed(0)
    shapes = [(t.shape) for t in (parts.optimizer["epilogue"].module.main.args[i][1] for i in range(2))]
    weights = [torch.nn.Parameter(torch.randn(s)) for s in shapes]
    grads = [torch.randn(s) for s in shapes]
    masters = [w.detach().clone() for w in weights]
    optimizer = torch.optim.AdamW(
        weights, lr=ADAMW["lr"], betas=(ADAMW["b1"], ADAMW["b2"]), eps=ADAMW["eps"], weight_decay=ADAMW["weight_decay"]
    )
    for w, g in zip(weights, grads, strict=True):
        w.grad = g
    optimizer.step()
    zeros = [np.zeros(s, np.float32) for s in shapes]
    out = run_module(parts.optimizer["epilogue"].module, [t.numpy() for t in (*masters, *grads)] + zeros + zeros)
    state = [optimizer.state[w] for w in weights]
    want = [*weights, *weights, *(s["exp_avg"] for s in state), *(s["exp_avg_sq"] for s in state)]
    _close(out, want, rtol=1e-6)


# ---- at scale, and the choices


def test_an_8b_block_lowers_in_seconds_without_materializing_a_weight():
    """llama-3.1-8b's block at batch 1, seq 4096, bfloat16: fake tensors only (its weights alone
    are 436 MB, its saved activations 853 MiB), and the hand count of what it saves: per token,
    per RMSNorm the float32 input, normalized input (4 d each) and rsqrt (4 B), the bfloat16
    output (2 d); RoPE's bf16 cos and sin for q and k; q, k, v, the output (bf16) and
    log-sum-exp (f32) of the attention core; SwiGLU's four (bf16)."""
    cfg = get_model("llama-3.1-8b")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    lowering, saved = _block_step(cfg, 1, 4096, "bfloat16", "none")
    seconds = time.perf_counter() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    d, f, hd, heads = cfg.d_model, cfg.d_ff, cfg.head_dim, cfg.n_heads
    hq, hk = heads * hd, cfg.n_kv_heads * hd
    per_token = 2 * (10 * d + 4) + 4 * 2 * hd + 2 * (hq + 2 * hk) + 2 * hq + 4 * heads + 4 * 2 * f
    assert saved == 4096 * per_token == 893_943_808
    assert grown < 600 * 2**20, f"{grown / 2**20:.0f} MiB"
    assert seconds < 60, f"{seconds:.1f} s"
    counts = collections.Counter(op.short_name for op in all_ops(lowering.module))
    assert counts["dot_general"] == 28


def test_an_unknown_recompute_mode_names_the_choices():
    from pytorch_side.train import lower_train_parts
    from reference.errors import UnknownName

    with pytest.raises(UnknownName, match="selective"):
        lower_train_parts(CFG, BATCH, SEQ, "float32", "some")
