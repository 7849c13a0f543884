"""predict_training: the step time, tokens/s, MFU and memory per chip of a training step on a
target, from the lowered parts of the step (reference/training.py) and a parallelism layout.

Every part's graph (forward+backward of the prologue, one layer, the epilogue; each part's
AdamW update) is compiled and costed by the target's own pipeline, as inference is. The layout
and what it adds are written down here, each formula small enough to check by hand:

    layout          tp x pp x dp = chips; tp splits each layer's matmuls (Megatron), pp splits
                    the layers into stages (1F1B schedule), dp replicates; the global batch is
                    m = global_batch / (dp x microbatch) microbatches per replica
    t_layer         the layer graph's time on tp chips (shard_tensor_parallel splits the matmuls and
                    attention's heads; with sequence parallelism, Korthikanti et al. 2022, the
                    fusions' time is divided by tp: norms and elementwise ops run on 1/tp of the
                    tokens, and each all-reduce is a reduce-scatter + all-gather, the same bytes), plus n_ar
                    all-reduces of the hidden state (microbatch x seq x d_model x bytes, ring over
                    tp): 4 a layer (2 forward, 2 backward, Megatron-LM's f and g operators), 6
                    under full recomputation (the forward runs again); 0 at tp = 1. The
                    epilogue adds one (the head's input gradient)
    t_stage         ceil(layers / pp) x t_layer, + the prologue on the first stage and the
                    epilogue on the last (the slowest stage sets the pace)
    t_p2p           pp > 1: one activation sent forward and one gradient back per microbatch,
                    stage boundary and virtual stage: vp x 2 x (a two-chip exchange of microbatch
                    x seq x d_model x bytes / tp): each of the tp chips sends its 1/tp
                    (Narayanan et al. 2021's scatter/gather optimization)
    pipeline_s      (m + (pp - 1) / vp) x (t_stage + t_p2p): 1F1B's m microbatches plus its fill
                    and drain, shortened by vp virtual stages a chip (the interleaved schedule,
                    each chip holding vp chunks of layers / (pp x vp) layers; it needs m a
                    multiple of pp); bubble_s = (pp - 1) / vp x (t_stage + t_p2p) of it
                    (Narayanan et al. 2021)
    dp_comm_s       the gradients' all-reduce over dp (ring: 2 (dp - 1) / dp x bytes / bus), once
                    a step: gradient accumulation defers it to the last microbatch, whose backward
                    it overlaps (DDP's buckets, Megatron's overlap_grad_reduce, XLA's async
                    collectives): exposed_dp_s = max(0, dp_comm_s - t_stage).
                    shard "full" (FSDP / ZeRO-3) all-gathers the weights in the forward and the
                    backward and reduce-scatters the gradients every microbatch, each half a ring
                    all-reduce: 1.5 all-reduces a microbatch, each overlapping that microbatch's
                    pass: exposed_dp_s = m x max(0, 1.5 x all-reduce - t_stage)
    optimizer_s     each part's AdamW graph, times its count (the layer's: layers), over the
                    chips that share the weights: / (tp x pp), and / dp when the optimizer is
                    sharded (shard "optimizer" or "full"); the update is elementwise, so 1/N of
                    the weights takes 1/N of the time
    step_s          pipeline_s + exposed_dp_s + optimizer_s

    memory per chip (P = weights / (tp x pp), mixed precision: model-dtype weights and
    gradients, float32 master weights and two moments; ZeRO's 16 bytes a weight in bf16):
        weights     P x w     gradients  P x w     optimizer  12 P (/ dp if sharded)
        shard "full" divides weights and gradients by dp too, and adds the gathered weights of
                    two layers (the one running and the next one's prefetch), / tp
        activations (saved per layer / tp) x ceil(layers / pp) x min(pp, m) (1F1B keeps pp
                    microbatches in flight on the first stage), x (1 + (pp - 1) / (pp x vp))
                    when interleaved (Korthikanti et al. 2022, section 4.2.3), + the
                    epilogue's saved / tp

    model FLOPs     per token 6 N + 12 x layers x n_heads x head_dim x seq (PaLM, appendix B;
                    N the weights of the matmuls: every weight but the embedding table)
    MFU             model FLOPs x tokens / (step_s x chips x the dtype's peak)

Collectives run over each family's own links (Family.allreduce): a GPU's or TPU's all-reduce
bus within a scale-up domain (interconnect.scale_up_chips: an NVLink node, a TPU pod's ICI) and
the scale-out network beyond it (interconnect.scale_out_bytes_per_s, one NIC a chip; a file
without them uses its bus for every group, said in the notes); an LPU's C2C links, 2 (N - 1)
hops of latency a ring; a wafer's system I/O. Host CPUs have none: one chip. A tp must divide
the heads, the KV heads and the MLP's width (Megatron-LM's rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import Target
from reference.errors import InvalidShape, LandscapeError, UnknownName
from reference.training import PARTS, RECOMPUTE, TrainParts

SHARDS = ("none", "optimizer", "full")
MASTER_BYTES = 12  # float32 master weight + Adam's two float32 moments, bytes a weight
# The microbatch sizes the search tries (sequences); larger ones rarely pay for their memory.
MICROBATCHES = (1, 2, 4, 8)
# Virtual stages a chip the search tries when pp > 1 (the interleaved 1F1B schedule needs
# layers % (pp x vp) == 0); NeMo's Llama-3.1-70B recipe runs 5.
VIRTUAL_STAGES = (1, 2, 4, 5, 8, 10)
# The widest tensor-parallel group the search tries: Megatron-LM and MaxText keep tp within a
# node's NVLink domain (8 GPUs); a user may give --tp above it.
MAX_SEARCH_TP = 8


@dataclass(frozen=True)
class Layout:
    """The parallelism plan of a step: every choice as data."""

    tp: int
    pp: int
    dp: int
    microbatch: int
    recompute: str
    shard: str
    vp: int = 1  # virtual pipeline stages a chip (interleaved 1F1B)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TrainPrediction:
    model: str
    target: str
    side: str
    chips: int
    global_batch: int
    seq: int
    layout: Layout
    microbatches: int
    terms: dict[str, float]  # seconds: t_layer, t_stage, t_p2p, pipeline_s, bubble_s, ...
    memory: dict[str, int]  # bytes a chip: weights, gradients, optimizer, activations, total, capacity
    weights: int  # the model's weight count
    model_flops: float  # per step
    peak_flop_per_s: float  # a chip's, at the dtype
    candidates: int  # layouts the search costed
    notes: tuple[str, ...] = ()
    parts: dict[str, float] = field(default_factory=dict)  # seconds of one execution of each part's graph

    @property
    def step_s(self) -> float:
        return self.terms["step_s"]

    @property
    def tokens_per_s(self) -> float:
        return self.global_batch * self.seq / self.step_s

    @property
    def tokens_per_s_per_chip(self) -> float:
        return self.tokens_per_s / self.chips

    @property
    def mfu(self) -> float:
        return self.model_flops / (self.step_s * self.chips * self.peak_flop_per_s)

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "target": self.target,
            "side": self.side,
            "chips": self.chips,
            "global_batch": self.global_batch,
            "seq": self.seq,
            "layout": self.layout.to_dict(),
            "microbatches": self.microbatches,
            "step_s": self.step_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
            "mfu": self.mfu,
            "model_flops": self.model_flops,
            "weights": self.weights,
            "terms": self.terms,
            "parts_s": self.parts,
            "memory": self.memory,
            "candidates": self.candidates,
            "notes": list(self.notes),
        }


def weight_count(lowering) -> int:
    """Elements of a lowering's weight arguments."""
    args = lowering.module.main.args
    return sum(args[i][1].elements for i in lowering.param_args)


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def tp_rule(cfg, tp: int) -> str | None:
    """Why `tp` cannot split the model's layers (Megatron-LM's rule: the attention heads, the KV
    heads and the MLP's width each divide by tp), or None when it can."""
    for what, count in (("attention heads", cfg.n_heads), ("KV heads", cfg.n_kv_heads), ("MLP width", cfg.d_ff)):
        if count % tp:
            return f"must divide the model's {count} {what}"
    return None


def layouts(chips: int, global_batch: int, cfg, fixed: dict) -> list[tuple[int, int, int, int]]:
    """(tp, pp, dp, microbatch) with tp x pp x dp = chips, tp splitting the layers (tp_rule), pp
    at most the layers and dp x microbatch dividing the global batch; a value in `fixed` (tp, pp,
    dp, microbatch) is kept, the rest searched: every divisor of the chips (tp up to MAX_SEARCH_TP)."""
    out = []
    tps = [fixed["tp"]] if fixed.get("tp") else _divisors(chips, MAX_SEARCH_TP)
    for tp in [t for t in tps if chips % t == 0 and tp_rule(cfg, t) is None]:
        for pp in [fixed["pp"]] if fixed.get("pp") else _divisors(chips // tp, cfg.n_layers):
            if chips % (tp * pp) or pp > cfg.n_layers:
                continue
            dp = chips // (tp * pp)
            if fixed.get("dp") and fixed["dp"] != dp:
                continue
            for mb in [fixed["microbatch"]] if fixed.get("microbatch") else MICROBATCHES:
                if global_batch % (dp * mb) == 0:
                    out.append((tp, pp, dp, mb))
    return out


def interleave_rule(pp: int, vp: int, layers: int, microbatches: int) -> str | None:
    """Why vp virtual stages a chip cannot run (Megatron-LM's interleaved schedule: pp >= 2,
    pp x vp dividing the layers, and the microbatches a multiple of pp), or None."""
    if pp < 2 or layers % (pp * vp):
        return f"needs --pp >= 2 with pp x vp dividing the model's {layers} layers"
    if microbatches % pp:
        return f"needs the microbatches a replica ({microbatches}) to be a multiple of pp = {pp}"
    return None


def check_layout(chips: int, global_batch: int, cfg, fixed: dict) -> None:
    """Refuse a fixed layout that cannot hold, naming the option and the rule (InvalidShape)."""
    for key, value in fixed.items():
        if value is not None and value < 1:
            raise InvalidShape("train", key, value, "must be an integer >= 1")
    layers = cfg.n_layers
    if fixed.get("tp") and (why := tp_rule(cfg, fixed["tp"])):
        raise InvalidShape("train", "tp", fixed["tp"], why)
    if fixed.get("pp") and fixed["pp"] > layers:
        raise InvalidShape("train", "pp", fixed["pp"], f"must be at most the model's {layers} layers")
    product = math.prod(fixed.get(k) or 1 for k in ("tp", "pp", "dp"))  # vp adds no chips
    given = " x ".join(k for k in ("tp", "pp", "dp") if fixed.get(k)) or "1"
    if chips % product:
        raise InvalidShape("train", "chips", chips, f"must be a multiple of {given} = {product}")
    if all(fixed.get(k) for k in ("tp", "pp", "dp")) and product != chips:
        raise InvalidShape("train", "chips", chips, f"must equal tp x pp x dp = {product}")
    vp = fixed.get("vp") or 1
    if vp > 1 and (not fixed.get("pp") or fixed["pp"] < 2 or layers % (fixed["pp"] * vp)):
        raise InvalidShape("train", "vp", vp, f"needs --pp >= 2 with pp x vp dividing the model's {layers} layers")
    if fixed.get("dp") and fixed.get("microbatch") and global_batch % (fixed["dp"] * fixed["microbatch"]):
        raise InvalidShape(
            "train",
            "global_batch",
            global_batch,
            f"must be a multiple of dp x microbatch = {fixed['dp'] * fixed['microbatch']}",
        )
    if not layouts(chips, global_batch, cfg, fixed):
        mbs = [fixed["microbatch"]] if fixed.get("microbatch") else list(MICROBATCHES)
        raise InvalidShape(
            "train",
            "global_batch",
            global_batch,
            f"no layout of {chips} chips divides it: dp x microbatch must divide the global batch, with microbatch "
            f"{' or '.join(map(str, mbs))}" + ("" if fixed.get("microbatch") else " (or give --microbatch)"),
        )


def holding(target: Target, module) -> Target:
    """The target with room on one chip for all of `module`'s arguments and results, to cost a
    part whose per-chip share train's own memory model counts: the AdamW update (each chip updates
    its 1/N of the weights, optimizer_s) and the embedding (each of a tp group's chips gathers its
    rows from its shard of the table). Its time does not depend on the capacity, only its plan's
    refusal does (70B's 1.05B-row table and its float32 state exceed a v5e chip or an LPU)."""
    from hardware_models.workload import program_footprint

    main = target.main_memory_level
    fraction = target.level_value(main, "usable_fraction", 1.0) or 1.0
    needed = program_footprint(module).needed_bytes + sum(t.nbytes for t in module.main.results)
    room = math.ceil(2 * needed / fraction)
    if room <= target.main_memory_bytes:
        return target
    return target.with_overrides({f"levels.{main}.bytes": room})


class _Parts:
    """Lowered and costed parts, cached: lowering by (microbatch, recompute), costs by tp too."""

    def __init__(self, lower: Callable[[int, str], TrainParts], target: Target):
        self.lower, self.target = lower, target
        self._low: dict = {}
        self._cost: dict = {}

    def lowered(self, mb: int, recompute: str) -> TrainParts:
        key = (mb, recompute)
        if key not in self._low:
            self._low[key] = self.lower(mb, recompute)
        return self._low[key]

    def cost(self, mb: int, recompute: str, tp: int, part: str) -> float:
        """Seconds of the part's graph on tp chips, without the all-reduce the partition adds
        (cost_layout counts tensor parallelism's own)."""
        key = (mb, recompute, tp, part)
        if isinstance(self._cost.get(key), LandscapeError):  # refused once: the same refusal, not a recompile
            raise self._cost[key]
        if key not in self._cost:
            module = self.lowered(mb, recompute).parts[part].module
            # the embedding has no matmul to split: each chip of the group gathers its rows (1 chip's cost)
            target = holding(self.target, module) if part == "prologue" else self.target
            try:
                plan = compile_plan(module, target, chips=1 if part == "prologue" else tp)
            except LandscapeError as err:
                self._cost[key] = err
                raise
            est = estimate(module, target, part, plan)
            kinds: dict[str, float] = {}
            for g in est.groups:
                kinds[g.kind] = kinds.get(g.kind, 0.0) + g.cost.time_s * g.repeats
            kinds.pop("transfer", None)
            # sequence parallelism (Korthikanti et al. 2022, section 4.2.2): with the matmuls split,
            # the norms and elementwise ops run on 1/tp of the tokens, so a fusion's time is divided
            # by tp (shard_tensor_parallel replicates them, the inference upper bound)
            fusion = kinds.pop("fusion", 0.0)
            self._cost[key] = sum(kinds.values()) + fusion / (1 if part == "prologue" else tp)
        return self._cost[key]

    def optimizer(self, part: str) -> float:
        key = ("adamw", part)
        if key not in self._cost:
            module = self.lowered(*next(iter(self._low))).optimizer[part].module
            target = holding(self.target, module)
            self._cost[key] = estimate(
                module, target, f"{part} adamw", compile_plan(module, target, chips=1)
            ).total.time_s
        return self._cost[key]


def allreduce_s(target: Target, nbytes: float, chips: int, span: int) -> float:
    """Seconds of a ring all-reduce of `nbytes` among `chips` chips spanning `span` consecutive
    ones, over the family's own links (Family.allreduce); 0 on one chip.

    Raises:
        InvalidShape: more than one chip of a family whose chips have no network between them.
    """
    if chips <= 1:
        return 0.0
    return _ring(target, span)(target, math.ceil(nbytes), chips, span).time_s


def _ring(target: Target, chips: int):
    """The family's all-reduce (Family.allreduce), refusing `chips` chips of a family without one."""
    ring = target.family_record.allreduce
    if ring is None:
        raise InvalidShape(
            "train", "chips", chips, f"{target.name}'s chips have no network between them; train it on --chips 1"
        )
    return ring


def cost_layout(
    parts: _Parts, target: Target, cfg, layout: Layout, global_batch: int, seq: int, act_bytes: int
) -> tuple[dict, dict, dict]:
    """(terms in seconds, memory in bytes a chip, seconds of each part) of one layout."""
    tp, pp, dp, mb, vp = layout.tp, layout.pp, layout.dp, layout.microbatch, layout.vp
    low = parts.lowered(mb, layout.recompute)
    m = global_batch // (dp * mb)
    layers_per_stage = math.ceil(cfg.n_layers / pp)
    n_ar = 6 if layout.recompute == "full" else 4
    part_s = {part: parts.cost(mb, layout.recompute, tp, part) for part in PARTS}
    hidden = mb * seq * cfg.d_model * act_bytes
    hidden_ar = allreduce_s(target, hidden, tp, tp)  # one all-reduce of the hidden state over tp
    tp_comm = n_ar * hidden_ar
    t_layer = part_s["block"] + tp_comm
    t_pro = part_s["prologue"]
    t_epi = part_s["epilogue"] + hidden_ar
    t_stage = (
        max(layers_per_stage * t_layer + t_pro, layers_per_stage * t_layer + t_epi)
        if pp > 1
        else (cfg.n_layers * t_layer + t_pro + t_epi)
    )
    # a send to the next stage: each tp chip sends its 1/tp (scatter/gather), a two-chip exchange
    t_p2p = vp * 2 * allreduce_s(target, hidden / tp, 2, tp * pp) if pp > 1 else 0.0
    pipeline_s = (m + (pp - 1) / vp) * (t_stage + t_p2p)
    bubble_s = (pp - 1) / vp * (t_stage + t_p2p)

    counts = {"prologue": 1, "block": cfg.n_layers, "epilogue": 0 if cfg.tie_embeddings else 1}
    total_weights = sum(weight_count(low.parts[p]) * counts[p] for p in PARTS if p != "epilogue") + (
        weight_count(low.parts["epilogue"]) - (0 if counts["epilogue"] else cfg.vocab * cfg.d_model)
    )
    chip_weights = math.ceil(total_weights / (tp * pp))
    grad_bytes = chip_weights * act_bytes
    gradient_ar = allreduce_s(target, grad_bytes, dp, tp * pp * dp)
    if layout.shard == "full":
        # every microbatch gathers the weights twice and reduce-scatters the gradients, each half a
        # ring all-reduce, hidden behind that microbatch's pass through the stage
        per_microbatch = 1.5 * gradient_ar
        dp_comm = m * per_microbatch
        exposed = m * max(0.0, per_microbatch - t_stage)
    else:
        # the gradients are reduced once, bucket by bucket, during the last microbatch's backward
        # (gradient accumulation defers the sync: DDP's no_sync, Megatron's overlap_grad_reduce)
        dp_comm = gradient_ar
        exposed = max(0.0, dp_comm - t_stage)
    opt_share = tp * pp * (dp if layout.shard != "none" else 1)
    optimizer_s = sum(parts.optimizer(p) * max(counts[p], 1) for p in PARTS) / opt_share
    step_s = pipeline_s + exposed + optimizer_s
    terms = {
        "t_layer": t_layer,
        "tp_comm_per_layer_s": tp_comm,
        "t_stage": t_stage,
        "t_p2p": t_p2p,
        "pipeline_s": pipeline_s,
        "bubble_s": bubble_s,
        "dp_comm_s": dp_comm,
        "exposed_dp_s": exposed,
        "optimizer_s": optimizer_s,
        "step_s": step_s,
    }
    state_div = dp if layout.shard == "full" else 1
    saved = low.saved_bytes
    in_flight = min(pp, m) * (1 + (pp - 1) / (pp * vp) if vp > 1 else 1)
    activations = math.ceil(math.ceil((saved["block"] or 0) / tp) * layers_per_stage * in_flight) + math.ceil(
        ((saved["epilogue"] or 0) + (saved["prologue"] or 0)) / tp
    )
    memory = {
        # FSDP gathers one layer's weights while the next one's gather is in flight (prefetch)
        "weights": math.ceil(chip_weights * act_bytes / state_div)
        + (2 * math.ceil(weight_count(low.parts["block"]) * act_bytes / tp) if layout.shard == "full" else 0),
        "gradients": math.ceil(grad_bytes / state_div),
        "optimizer": math.ceil(chip_weights * MASTER_BYTES / (dp if layout.shard != "none" else 1)),
        "activations": activations,
    }
    memory["total"] = sum(memory.values())
    memory["capacity"] = int(target.usable_main_memory_bytes)
    memory["weights_total"] = total_weights
    return terms, memory, part_s


def active_weights(cfg, weights: int) -> int:
    """The matmul weights a token runs through: all but the embedding table (a tied table is the
    LM head's), and of a mixture of experts' layers only top_k of the n_experts experts (each a
    SwiGLU MLP, 3 x d_model x d_ff): Mixtral-8x7B's 46.7B weights run 12.9B a token."""
    n = weights - (0 if cfg.tie_embeddings else cfg.vocab * cfg.d_model)
    if cfg.n_experts:
        n -= cfg.n_layers * (cfg.n_experts - cfg.top_k) * 3 * cfg.d_model * cfg.d_ff
    return n


def model_flops(cfg, weights: int, tokens: int, seq: int) -> float:
    """PaLM's model FLOPs of a step (appendix B): per token 6 N + 12 L H Q T, N the active
    matmul weights (active_weights)."""
    return tokens * (6 * active_weights(cfg, weights) + 12 * cfg.n_layers * cfg.n_heads * cfg.head_dim * seq)


def predict_training(
    lower: Callable[[int, str], TrainParts],
    target: Target,
    cfg,
    *,
    chips: int,
    global_batch: int,
    seq: int,
    dtype_bytes: int,
    peak_flop_per_s: float,
    recompute: str | None = None,
    shard: str | None = None,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    microbatch: int | None = None,
    vp: int | None = None,
    side: str = "jax",
) -> TrainPrediction:
    """The fastest layout that fits each chip's usable memory (the given choices kept).

    Args:
        lower: (microbatch, recompute) -> the step's parts (jax_side.train / pytorch_side.train).
        cfg: the model's ModelConfig.

    Raises:
        UnknownName: recompute or shard not among the choices.
        InvalidShape: a fixed layout that cannot hold, or no layout fits memory (naming the
            least a chip needs).
    """
    if recompute is not None and recompute not in RECOMPUTE:
        raise UnknownName("recompute", recompute, RECOMPUTE)
    if shard is not None and shard not in SHARDS:
        raise UnknownName("shard", shard, SHARDS)
    fixed = {"tp": tp, "pp": pp, "dp": dp, "microbatch": microbatch}
    check_layout(chips, global_batch, cfg, {**fixed, "vp": vp})
    if chips > 1:
        _ring(target, chips)  # several chips with no network between them: refused before lowering
    parts = _Parts(lower, target)
    best, smallest, refused, count = None, None, [], 0
    for t, p, d, mb in layouts(chips, global_batch, cfg, fixed):
        m = global_batch // (d * mb)
        stages = [vp] if vp else VIRTUAL_STAGES
        for rc in [recompute] if recompute else RECOMPUTE:
            for sh in [shard] if shard else SHARDS:
                for v in [v for v in stages if v == 1 or interleave_rule(p, v, cfg.n_layers, m) is None]:
                    layout = Layout(t, p, d, mb, rc, sh, v)
                    try:
                        terms, memory, part_s = cost_layout(parts, target, cfg, layout, global_batch, seq, dtype_bytes)
                    except LandscapeError as err:  # the target's pipeline refused this tp (too few chips for SRAM)
                        refused.append(err)
                        break
                    count += 1
                    if smallest is None or memory["total"] < smallest[1]["total"]:
                        smallest = (layout, memory)
                    if memory["total"] > memory["capacity"]:
                        continue
                    if best is None or terms["step_s"] < best[1]["step_s"]:
                        best = (layout, terms, memory, part_s)
    if best is None:
        from reference.units import format_bytes

        if smallest is None:
            if refused:
                raise refused[0]  # already one line naming what the target refused
            why = interleave_rule(pp or 1, vp or 1, cfg.n_layers, global_batch // ((dp or 1) * (microbatch or 1)))
            raise InvalidShape("train", "vp", vp, why or "no layout with it could be costed")
        layout, memory = smallest
        raise InvalidShape(
            "train",
            "chips",
            chips,
            f"no layout fits {target.name}'s {format_bytes(memory['capacity'])} a chip: the smallest "
            f"(tp {layout.tp}, pp {layout.pp}, dp {layout.dp}, recompute {layout.recompute}, shard "
            f"{layout.shard}) needs {format_bytes(memory['total'])}; give more --chips or a smaller --seq",
        )
    layout, terms, memory, part_s = best
    weights = memory.pop("weights_total")
    notes = []
    if layout.tp > 1:
        notes.append(
            f"tensor parallelism with sequence parallelism: the matmuls and attention heads split over {layout.tp} "
            f"chips, the norms and elementwise ops over the tokens"
        )
    domain, out = target.get("interconnect.scale_up_chips"), target.get("interconnect.scale_out_bytes_per_s")
    if chips > 1 and not out and (not domain or chips > domain):
        notes.append(
            f"{target.name}'s file has no scale-out network (interconnect.scale_up_chips, scale_out_bytes_per_s): "
            "every collective runs at its all-reduce bus bandwidth"
        )
    lowered = parts.lowered(layout.microbatch, layout.recompute)
    return TrainPrediction(
        cfg.name,
        target.name,
        side,
        chips,
        global_batch,
        seq,
        layout,
        global_batch // (layout.dp * layout.microbatch),
        terms,
        memory,
        weights,
        model_flops(cfg, weights, global_batch * seq, seq),
        peak_flop_per_s,
        count,
        tuple(notes) + lowered.notes,
        part_s,
    )
