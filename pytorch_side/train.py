"""The PyTorch side of a training step (reference/training.py): each part's forward and backward
as AOTAutograd makes them, partitioned as torch runs them, through torch-mlir into the IR.

Per part (prologue, block, epilogue), on fake tensors (FakeTensorMode: no weight is materialized,
so the 8B block lowers as quickly as the tiny one):
    1. AOTAutograd traces the part's joint forward+backward graph
       (`torch._functorch.aot_autograd.aot_export_joint_simple`), the part's weights, buffers and
       activations its inputs;
    2. `torch._functorch.partitioners.default_partition` splits it into a forward graph and a
       backward graph, as eager autograd runs them: the forward's extra outputs are what it saves
       for the backward (`saved_bytes`: their bytes, the part's inputs and views left out).
       Recomputation is torch.utils.checkpoint's own (non-reentrant, with
       `create_selective_checkpoint_contexts`): under AOTAutograd's tracing it tags each op of
       the region "recompute" or "save" by its policy, and the partitioner copies the recomputed
       ops into the backward graph, as torch.compile does;
    3. each graph goes through torch.export, the attention's fused CPU kernels written out as
       their math (`FLASH_DECOMPOSITIONS`: torch-mlir has no lowering of the backward), and
       torch-mlir's StableHLO (pytorch_side/export.py `to_stablehlo`) on its own: lowered as one
       program, torch-mlir's CSE would merge the recomputed ops back into the forward's;
    4. the IR's main calls @forward, then @backward on what it saved and the cotangents.

The attention core is `F.scaled_dot_product_attention`, which AOTAutograd keeps as one op
(`_scaled_dot_product_flash_attention_for_cpu`) with its own backward: the forward saves q, k, v,
the output and the row log-sum-exp, and the backward recomputes the scores (FlashAttention's
recipe, as reference/training.py asks in every mode). AdamW is written with torch ops:
torch.optim's own updates its state in place and reads the step count on the host, which
torch.export does not trace.

What is saved is what torch saves on the CPU, whose ops the fake tensors trace: nn.RMSNorm is
torch's composite there, which in bfloat16 keeps float32 copies of its input and its normalized
input for the backward (on CUDA torch dispatches it to `_fused_rms_norm`, whose backward keeps
less).
"""

from __future__ import annotations

import dataclasses
import math
import operator
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from pytorch_side.export import quiet, to_stablehlo
from pytorch_side.kernels import TORCH_DTYPES
from pytorch_side.layers import Block, Epilogue, Prologue, routed_moe
from pytorch_side.regional import ASSERTIONS
from reference.dtypes import FLOAT_DTYPES, get_dtype
from reference.errors import LoweringFailed, UnknownName
from reference.ir import Function, Module, Op, Origin, TensorType, parse_stablehlo, verify
from reference.lowering import Lowering
from reference.models import ModelConfig
from reference.training import ADAMW, RECOMPUTE, TrainParts

aten = torch.ops.aten

# The ops whose outputs "selective" recomputation saves: the matmuls, and the attention core
# (its output and log-sum-exp: the inputs to its own backward).
MATMULS = (aten.mm.default, aten.bmm.default, aten.addmm.default, aten.baddbmm.default)
ATTENTION = (
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention.default,
    aten._scaled_dot_product_efficient_attention.default,
    aten._scaled_dot_product_cudnn_attention.default,
)


# ---- the attention core's fused CPU kernels as their math (torch-mlir has no lowering of the backward)


def _scores(q, k, attn_mask, is_causal, scale):
    """Scores of a [B, N, T, H] query against [B, K, S, H] keys, as [B, K, G, T, S] in float32
    (G = N / K query heads per key head, grouped-query attention without repeating the keys)."""
    b, n, t, h = q.shape
    kv, s = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(h) if scale is None else scale
    scores = torch.matmul(q.reshape(b, kv, (n // kv) * t, h), k.transpose(-1, -2))  # [B, K, G*T, S]
    scores = scores.float().reshape(b, kv, n // kv, t, s) * scale
    if is_causal:  # torch's convention: query i sees keys 0..i (the top-left triangle)
        rows, cols = torch.arange(t).reshape(t, 1), torch.arange(s).reshape(1, s)
        scores = scores.masked_fill(cols > rows, float("-inf"))
    if attn_mask is not None:
        mask = attn_mask.expand(b, n, t, s).reshape(b, kv, n // kv, t, s)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask.float()
    return scores, scale


def _laid_out(t: torch.Tensor, order: tuple[int, ...]) -> torch.Tensor:
    """t with its dimensions in memory in `order` (outermost first), the fused kernel's layout, so
    that the views the graph takes of the kernel's results stay valid."""
    inverse = tuple(order.index(d) for d in range(len(order)))
    return t.permute(order).contiguous().permute(inverse)


def _order(t: torch.Tensor) -> tuple[int, ...]:
    """t's dimensions from the outermost in memory to the innermost."""
    return tuple(sorted(range(t.dim()), key=lambda d: -t.stride(d)))


def flash_attention_forward(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    """(output [B, N, T, H], log-sum-exp [B, N, T] in float32), as the fused kernel returns them."""
    torch._check(dropout_p == 0.0, lambda: f"attention with dropout ({dropout_p}) is not lowered")
    b, n, t, h = query.shape
    kv = key.shape[1]
    scores, _ = _scores(query, key, attn_mask, is_causal, scale)
    lse = torch.logsumexp(scores, dim=-1)  # [B, K, G, T]
    probs = torch.exp(scores - lse.unsqueeze(-1)).to(value.dtype)
    out = torch.matmul(probs.reshape(b, kv, (n // kv) * t, -1), value)  # [B, K, G*T, H]
    return _laid_out(out.reshape(b, n, t, h), _order(query)), _laid_out(lse.reshape(b, n, t), (0, 2, 1))


def flash_attention_backward(
    grad_out, query, key, value, out, logsumexp, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None
):
    """(dq, dk, dv): the scores recomputed from q and k and normalized by the saved log-sum-exp."""
    b, n, t, h = query.shape
    kv, s = key.shape[1], key.shape[2]
    g = n // kv
    scores, scale = _scores(query, key, attn_mask, is_causal, scale)
    probs = torch.exp(scores - logsumexp.reshape(b, kv, g, t, 1))  # [B, K, G, T, S] float32
    do = grad_out.reshape(b, kv, g * t, h)
    dv = torch.matmul(probs.to(value.dtype).reshape(b, kv, g * t, s).transpose(-1, -2), do)  # [B, K, S, H]
    dp = torch.matmul(do, value.transpose(-1, -2)).float().reshape(b, kv, g, t, s)
    delta = (grad_out.float() * out.float()).sum(-1).reshape(b, kv, g, t, 1)
    ds = (probs * (dp - delta) * scale).to(query.dtype).reshape(b, kv, g * t, s)
    dq = torch.matmul(ds, key).reshape(b, n, t, h)
    dk = torch.matmul(ds.transpose(-1, -2), query.reshape(b, kv, g * t, h))
    return tuple(_laid_out(grad, (0, 2, 1, 3)) for grad in (dq, dk, dv))


@torch.library.custom_op("landscape::flash_attention_for_cpu", mutates_args=())
def seeded_free_flash_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    is_causal: bool = False,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's fused CPU attention without dropout, as an op that draws no random numbers.

    The fused op is tagged `nondeterministic_seeded` (its dropout), so when it is recomputed the
    partitioner threads an RNG state between the forward and the backward
    (`run_and_save_rng_state`), which torch.export cannot trace; without dropout it draws nothing,
    and the joint graph's op is retargeted to this one (`_without_seeds`)."""
    return aten._scaled_dot_product_flash_attention_for_cpu.default(
        query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale
    )


@seeded_free_flash_attention.register_fake
def _(query, key, value, is_causal=False, attn_mask=None, scale=None):
    return aten._scaled_dot_product_flash_attention_for_cpu.default(
        query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale
    )


def _without_seeds(graph: torch.fx.Graph) -> None:
    """Retarget the graph's dropout-free fused attention to `seeded_free_flash_attention`."""
    for node in graph.find_nodes(op="call_function", target=aten._scaled_dot_product_flash_attention_for_cpu.default):
        query, key, value, dropout_p, is_causal = (*node.args, *(0.0, False)[len(node.args) - 3 :])
        if dropout_p == 0.0:
            node.target = torch.ops.landscape.flash_attention_for_cpu.default
            node.args = (query, key, value, is_causal, node.kwargs.get("attn_mask"), node.kwargs.get("scale"))
            node.kwargs = {}


def _seeded_free_forward(query, key, value, is_causal=False, attn_mask=None, scale=None):
    return flash_attention_forward(query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale)


FLASH_DECOMPOSITIONS = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: flash_attention_forward,
    torch.ops.landscape.flash_attention_for_cpu.default: _seeded_free_forward,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: flash_attention_backward,
}


# ---- recomputation: torch.utils.checkpoint's selective-checkpoint policies


def _policy(recompute: str):
    """The checkpoint policy of a mode: "full" recomputes every op, "selective" saves the matmuls'
    and the attention core's outputs and recomputes the rest."""
    from torch.utils.checkpoint import CheckpointPolicy

    def policy(ctx, op, *args, **kwargs):
        if recompute == "selective" and op in (*MATMULS, *ATTENTION):
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def _checkpointed(fn, recompute: str):
    """fn under torch.utils.checkpoint with the mode's policy; fn itself for "none"."""
    if recompute == "none":
        return fn
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    def context_fn():
        # the region's id, which torch.compile's checkpoint op gives it (torch/_higher_order_ops/wrap.py):
        # the partitioner compares the ids of adjacent regions
        forward_ctx, recompute_ctx = create_selective_checkpoint_contexts(_policy(recompute))
        forward_ctx.ac_graph_id = 1
        return forward_ctx, recompute_ctx

    def wrapped(*args):
        return checkpoint(fn, *args, use_reentrant=False, context_fn=context_fn)

    return wrapped


# ---- one part: joint graph, partition, forward-then-backward program


@dataclasses.dataclass(frozen=True)
class _Part:
    """A part's forward and backward graphs, and what the forward saves."""

    forward: torch.fx.GraphModule
    backward: torch.fx.GraphModule
    n_outputs: int
    saved: tuple[torch.fx.Node, ...]  # the tensors the forward saves, each once (views: their base)


VIEWS = (aten._unsafe_view.default,)  # not a view by its schema, but one by what it does


def _is_view(node) -> bool:
    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and (getattr(node.target, "is_view", False) or node.target in VIEWS)
    )


def _root(node: torch.fx.Node) -> torch.fx.Node:
    """The tensor whose memory a view (of a view..., or a piece of a split) holds."""
    while _is_view(node) or (node.target is operator.getitem and _is_view(node.args[0])):
        node = node.args[0] if _is_view(node) else node.args[0].args[0]
    return node


def _nbytes(node: torch.fx.Node) -> int:
    val = node.meta.get("val")
    return val.numel() * val.element_size() if isinstance(val, torch.Tensor) else 0


def partition(fn, primals: list[torch.Tensor], n_outputs: int, n_state: int) -> _Part:
    """AOTAutograd's joint graph of fn(*primals) -> n_outputs tensors, split by default_partition.
    The first n_state primals are the part's weights and buffers: held anyway, they are not
    counted as saved; an activation input is, when the backward reads it."""
    from torch._functorch.aot_autograd import aot_export_joint_simple
    from torch._functorch.partitioners import default_partition

    joint = aot_export_joint_simple(fn, primals, trace_joint=True)
    # torch's metadata assertions (`.to(dtype)`'s) compute nothing, and the partitioner refuses to
    # recompute a region holding one (it counts as impure): they are dropped, as regional.py does
    for node in [n for n in joint.graph.nodes if n.op == "call_function" and n.target in ASSERTIONS]:
        if not node.users:
            joint.graph.erase_node(node)
    _without_seeds(joint.graph)
    joint.recompile()
    forward, backward = default_partition(joint, primals, num_fwd_outputs=n_outputs)
    out = forward.graph.find_nodes(op="output")[0].args[0]
    state = set(forward.graph.find_nodes(op="placeholder")[:n_state])
    roots = {}
    for node in out[n_outputs:]:
        root = _root(node) if isinstance(node, torch.fx.Node) else None
        if root is not None and root not in state:
            roots[root] = None
    return _Part(forward, backward, n_outputs, tuple(roots))


class _Program(nn.Module):
    """forward(*args) = the graph's outputs at `keep` (the backward's None gradients left out);
    `ones` (argument index -> shape, dtype) are not arguments but the constant 1: a scalar
    loss's cotangent."""

    def __init__(self, graph: torch.fx.GraphModule, keep: tuple[int, ...], ones: dict | None = None):
        super().__init__()
        self._held = (graph, keep, ones or {})  # outside nn.Module's registry: nothing is lifted as state

    def forward(self, *args):
        graph, keep, ones = self._held
        given = iter(args)
        n = len(graph.graph.find_nodes(op="placeholder"))
        full = [torch.ones(ones[i][0], dtype=ones[i][1]) if i in ones else next(given) for i in range(n)]
        out = graph(*full)
        return tuple(out[i] for i in keep)


def _like(val: torch.Tensor) -> torch.Tensor:
    """A fresh (fake) tensor of val's shape, strides and dtype: the graph's views depend on strides."""
    return torch.empty_strided(val.shape, val.stride(), dtype=val.dtype)


def _lower(program: nn.Module, args: list[torch.Tensor], name: str) -> tuple[Module, dict[str, str], tuple[str, ...]]:
    """torch.export of a program, the attention's fused kernels written out (FLASH_DECOMPOSITIONS),
    then torch-mlir's StableHLO as the IR: (module, stage texts, notes).

    Raises:
        LoweringFailed: torch.export or torch-mlir could not lower it, or torch-mlir dropped an argument.
    """
    try:
        with warnings.catch_warnings(), quiet():
            warnings.simplefilter("ignore", FutureWarning)  # torch-mlir's pytree deprecation notice
            exported = torch.export.export(program, tuple(args)).run_decompositions(FLASH_DECOMPOSITIONS)
    except Exception as err:  # noqa: BLE001 - any export failure is reported as one line
        detail = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        raise LoweringFailed(f"{name}: torch lowering failed: {detail}") from err
    mlir_module, notes = to_stablehlo(exported, name)
    module = verify(parse_stablehlo(mlir_module.operation.get_asm(enable_debug_info=True)))
    if len(module.main.args) != len(args):
        raise LoweringFailed(f"{name}: torch-mlir dropped arguments: {len(module.main.args)} of {len(args)} are left")
    stages = {
        "fx": exported.graph_module.print_readable(print_output=False),
        "stablehlo": mlir_module.operation.get_asm(),
    }
    return module, stages, notes


def _as_callee(module: Module, name: str) -> tuple[Function, tuple[Function, ...]]:
    """The module's entry renamed `name`, and its other functions prefixed with `name.`."""
    names = {f.name: name if f.name == module.entry else f"{name}.{f.name}" for f in module.functions}

    def fix(op: Op) -> Op:
        regions = tuple(dataclasses.replace(r, ops=tuple(fix(o) for o in r.ops)) for r in op.regions)
        return dataclasses.replace(op, callee=names.get(op.callee, op.callee) if op.callee else None, regions=regions)

    functions = [dataclasses.replace(f, name=names[f.name], ops=tuple(fix(o) for o in f.ops)) for f in module.functions]
    entry = next(f for f in functions if f.name == name)
    return entry, tuple(f for f in functions if f is not entry)


def _call(callee: Function, operands: list[tuple[str, TensorType]]) -> Op:
    return Op(
        name="func.call",
        results=tuple(f"%{callee.name}.{i}" for i in range(len(callee.results))),
        result_types=callee.results,
        operands=tuple(v for v, _ in operands),
        operand_types=tuple(t for _, t in operands),
        callee=callee.name,
        origin=Origin(scope=callee.name),
    )


def lower_step(part: _Part, grads: tuple[int, ...], loss: bool, name: str) -> tuple[Module, dict, tuple[str, ...]]:
    """The part's training step as one IR module: main(*primals, *cotangents) calls @forward, then
    @backward on what the forward saved and the cotangents, and returns the forward's outputs and
    the backward's outputs at `grads`. With `loss` the scalar output's cotangent is the constant 1,
    not an argument. The two graphs go through torch.export and torch-mlir each on its own, as
    torch runs them, so no compiler merges the backward's recomputed ops into the forward's.

    Returns:
        (module, stage texts, notes).
    """
    fw_in = part.forward.graph.find_nodes(op="placeholder")
    fw_out = part.forward.graph.find_nodes(op="output")[0].args[0]
    bw_in = part.backward.graph.find_nodes(op="placeholder")
    if any(not isinstance(n.meta.get("val"), torch.Tensor) for n in bw_in):
        raise LoweringFailed(f"{name}: the forward saves a symbolic size for the backward; shapes must be static")
    made = tuple(i for i, n in enumerate(fw_out) if n.op != "placeholder")  # saved inputs are read directly
    fw_module, fw_stages, notes = _lower(
        _Program(part.forward, made), [_like(n.meta["val"]) for n in fw_in], f"{name}.forward"
    )
    fw_names = {n.name for n in fw_out} | {n.name for n in fw_in}
    ones = {
        i: (n.meta["val"].shape, n.meta["val"].dtype) for i, n in enumerate(bw_in) if loss and n.name not in fw_names
    }
    bw_module, bw_stages, bw_notes = _lower(
        _Program(part.backward, grads, ones),
        [_like(n.meta["val"]) for i, n in enumerate(bw_in) if i not in ones],
        f"{name}.backward",
    )
    forward, fw_others = _as_callee(fw_module, "forward")
    backward, bw_others = _as_callee(bw_module, "backward")
    args = [(f"%arg{i}", t) for i, (_, t) in enumerate(forward.args)]
    call_fw = _call(forward, args)
    values = {n.name: a for n, a in zip(fw_in, args, strict=True)}
    values.update({fw_out[i].name: v for i, v in zip(made, zip(call_fw.results, call_fw.result_types), strict=True)})
    bw_args = [n for i, n in enumerate(bw_in) if i not in ones]
    for n, (_, t) in zip(bw_args, backward.args, strict=True):
        if n.name not in values:  # a cotangent: an argument of the step
            values[n.name] = (f"%arg{len(args)}", t)
            args.append(values[n.name])
    call_bw = _call(backward, [values[n.name] for n in bw_args])
    results = [values[n.name] for n in fw_out[: part.n_outputs]] + list(zip(call_bw.results, call_bw.result_types))
    ret = Op("func.return", (), (), tuple(v for v, _ in results), tuple(t for _, t in results))
    main = Function("main", tuple(args), tuple(t for _, t in results), (call_fw, call_bw, ret))
    module = verify(Module((main, forward, backward, *fw_others, *bw_others), "main"))
    stages = {k: f"// ---- forward\n{fw_stages[k]}\n// ---- backward\n{bw_stages[k]}" for k in fw_stages}
    return module, stages, notes + bw_notes


def lower_train_part(
    module: nn.Module,
    activations: list[torch.Tensor],
    differentiable: tuple[bool, ...],
    name: str,
    select=lambda out: out,
    loss: bool = False,
    recompute: str = "none",
) -> tuple[Lowering, int]:
    """One part's forward+backward program, and the bytes its forward saves for the backward.

    The program's arguments are the module's weights, its buffers, the activations, then (unless
    `loss`: a scalar loss's cotangent is 1) the outputs' cotangents; its results the output, the
    differentiable activations' gradients, then the weights' gradients. `select` picks the
    differentiated output from the module's.

    Raises:
        LoweringFailed: AOTAutograd could not trace the backward, or torch.export or torch-mlir
            could not lower the forward or the backward graph.
    """
    weights, buffers = dict(module.named_parameters()), dict(module.named_buffers())
    state_names = (*weights, *buffers)

    def fn(*args):
        state = dict(zip(state_names, args[: len(state_names)], strict=True))
        return (select(torch.func.functional_call(module, state, tuple(args[len(state_names) :]))),)

    primals = [
        *(w.detach().requires_grad_(True) for w in weights.values()),
        *(b.detach() for b in buffers.values()),
        *(a.detach().requires_grad_(d) for a, d in zip(activations, differentiable, strict=True)),
    ]
    try:
        with warnings.catch_warnings(), quiet():
            warnings.simplefilter("ignore", UserWarning)  # torch.utils.checkpoint's notices
            part = partition(_checkpointed(fn, recompute), primals, n_outputs=1, n_state=len(state_names))
    except Exception as err:  # noqa: BLE001 - any tracing failure is reported as one line
        detail = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        raise LoweringFailed(f"{name}: AOTAutograd could not trace the backward: {detail}") from err
    n_state = len(state_names)
    grads = (*(n_state + i for i, d in enumerate(differentiable) if d), *range(len(weights)))
    ir, stages, notes = lower_step(part, grads, loss, name)
    arg_names = (
        *state_names,
        *(f"inputs[{i}]" for i in range(len(activations))),
        *(("cotangents[0]",) if not loss else ()),
    )
    if len(arg_names) != len(ir.main.args):  # the backward reads no cotangent: a part that returns a constant
        raise LoweringFailed(f"{name}: the step takes {len(ir.main.args)} arguments, not {len(arg_names)}")
    main = dataclasses.replace(ir.main, arg_names=arg_names)
    ir = dataclasses.replace(ir, functions=(main, *ir.functions[1:]))
    lowering = Lowering(
        "torch",
        name,
        stages,
        ir,
        tuple(range(len(weights))),
        buffer_args=tuple(range(len(weights), n_state)),
        notes=notes,
    )
    return lowering, sum(_nbytes(n) for n in part.saved)


# ---- AdamW


class AdamW(nn.Module):
    """torch.optim.AdamW's update (decoupled weight decay, bias-corrected moments; reference/training.py
    ADAMW) at step 1, out of place, in mixed precision: float32 master weights and moments, the
    gradient (in the model's dtype) cast up, and the weights in the model's dtype written back, as
    jax_side/train.py's optax step does and hardware_models/train.py's memory counts (12 bytes a weight):

        forward(*master, *grads, *exp_avg, *exp_avg_sq) -> (*master, *weights, *exp_avg, *exp_avg_sq)
    """

    def __init__(self, n: int, step: int = 1):
        super().__init__()
        self.n, self.step = n, step

    def forward(self, *args):
        n, hp = self.n, ADAMW
        masters, grads, exp_avgs, exp_avg_sqs = (args[i * n : (i + 1) * n] for i in range(4))
        bias1, bias2 = 1 - hp["b1"] ** self.step, 1 - hp["b2"] ** self.step
        out = [], [], [], []
        for w, g, m, v in zip(masters, grads, exp_avgs, exp_avg_sqs, strict=True):
            g32 = g.float()
            m = m * hp["b1"] + g32 * (1 - hp["b1"])
            v = v * hp["b2"] + g32 * g32 * (1 - hp["b2"])
            denom = torch.sqrt(v) / math.sqrt(bias2) + hp["eps"]
            w = w * (1 - hp["lr"] * hp["weight_decay"]) - (hp["lr"] / bias1) * m / denom
            for kept, value in zip(out, (w, w.to(g.dtype), m, v), strict=True):
                kept.append(value)
        return tuple(t for kept in out for t in kept)


def lower_adamw(weights: dict[str, torch.Tensor], name: str) -> Lowering:
    """The AdamW update of these (fake) weights (`AdamW`). Its weight arguments (param_args) are
    the float32 master weights; the gradients (the weights' dtype) and the moments follow."""
    masters = [torch.empty(w.shape, dtype=torch.float32) for w in weights.values()]
    grads = [torch.empty(w.shape, dtype=w.dtype) for w in weights.values()]
    args = [*masters, *grads, *(torch.empty_like(m) for m in masters), *(torch.empty_like(m) for m in masters)]
    module, stages, notes = _lower(AdamW(len(masters)), args, name)
    kinds = ("master", "grad", "exp_avg", "exp_avg_sq")
    main = dataclasses.replace(module.main, arg_names=tuple(f"{kind}[{w}]" for kind in kinds for w in weights))
    module = dataclasses.replace(module, functions=tuple(main if f is module.main else f for f in module.functions))
    return Lowering("torch", name, stages, module, tuple(range(len(masters))), notes=notes)


# ---- the three parts of a decoder


class EpilogueLoss(Epilogue):
    """The epilogue, then the mean token cross-entropy of its logits (upcast to float32, as
    Hugging Face's causal-LM loss does) against int64 labels: forward(x, labels) -> loss."""

    def forward(self, x, labels):
        logits = super().forward(x)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1))


NOTES = (
    "the block's forward and backward are AOTAutograd's graphs, split by its default partitioner "
    "(what eager autograd saves); main calls @forward, then @backward on what it saved",
    "recompute applies to the block (torch.utils.checkpoint, one region per layer); the prologue and "
    "the epilogue save what autograd saves",
    "the loss is the mean token cross-entropy of the logits upcast to float32, against int64 labels",
    "AdamW at step 1, out of place, in mixed precision: float32 master weights and moments, the "
    "model-dtype weights written back",
)


def lower_train_parts(cfg: ModelConfig, batch: int, seq: int, dtype: str, recompute: str = "none") -> TrainParts:
    """A decoder's training step at one microbatch shape: prologue, one block and epilogue, each
    forward+backward, and AdamW over each part's weights (reference/training.py), on fake tensors.

    Raises:
        UnknownName: a recompute mode or a dtype that does not exist.
        LoweringFailed: AOTAutograd, torch.export or torch-mlir could not lower a part.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    if recompute not in RECOMPUTE:
        raise UnknownName("recompute mode", recompute, RECOMPUTE)
    dt = TORCH_DTYPES[get_dtype(dtype, FLOAT_DTYPES).name]
    notes = list(NOTES)
    if cfg.tie_embeddings:
        notes.append(
            "tied embeddings: the epilogue's table is the prologue's; each part lowers its own gradient "
            "and AdamW update of it, as for two tables"
        )
    parts, optimizer, saved = {}, {}, {}
    with FakeTensorMode(allow_non_fake_inputs=True), routed_moe():  # the costed graph routes its tokens
        ids = torch.empty((batch, seq), dtype=torch.int32)
        labels = torch.empty((batch, seq), dtype=torch.int64)
        x = torch.empty((batch, seq, cfg.d_model), dtype=dt)
        specs = {  # module, activations, which are differentiated, the output, a loss?, recompute
            "prologue": (Prologue(cfg, dt), [ids], (False,), lambda out: out, False, "none"),
            "block": (Block(cfg, dt), [x], (True,), lambda out: out[0], False, recompute),
            "epilogue": (EpilogueLoss(cfg, dt), [x, labels], (True, False), lambda out: out, True, "none"),
        }
        for part, (module, acts, diff, select, loss, mode) in specs.items():
            label = f"{cfg.name}.{part}"
            parts[part], saved[part] = lower_train_part(
                module, acts, diff, f"{label}.train", select, loss=loss, recompute=mode
            )
            optimizer[part] = lower_adamw(dict(module.named_parameters()), f"{label}.adamw")
    return TrainParts("torch", cfg.name, batch, seq, recompute, parts, optimizer, saved, tuple(notes))
