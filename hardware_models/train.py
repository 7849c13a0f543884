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
                    stage boundary and virtual stage: vp x 2 x (latency + microbatch x seq x
                    d_model x bytes / tp / bandwidth): each of the tp chips sends its 1/tp
                    (Narayanan et al. 2021's scatter/gather optimization)
    pipeline_s      (m + (pp - 1) / vp) x (t_stage + t_p2p): 1F1B's m microbatches plus its fill
                    and drain, shortened by vp virtual stages a chip (the interleaved schedule,
                    each chip holding vp chunks of layers / (pp x vp) layers);
                    bubble_s = (pp - 1) / vp x (t_stage + t_p2p) of it (Narayanan et al. 2021)
    dp_comm_s       the gradients' all-reduce over dp (ring: 2 (dp - 1) / dp x bytes / bus);
                    shard "full" (FSDP / ZeRO-3) all-gathers the weights in the forward and the
                    backward and reduce-scatters the gradients: 3 (dp - 1) / dp x bytes / bus
                    per microbatch. It overlaps the backward (DDP's buckets, XLA's async
                    collectives): exposed_dp_s = max(0, dp_comm_s - pipeline_s)
    optimizer_s     each part's AdamW graph, times its count (the layer's: layers), over the
                    chips that share the weights: / (tp x pp), and / dp when the optimizer is
                    sharded (shard "optimizer" or "full"); the update is elementwise, so 1/N of
                    the weights takes 1/N of the time
    step_s          pipeline_s + exposed_dp_s + optimizer_s

    memory per chip (P = weights / (tp x pp), mixed precision: model-dtype weights and
    gradients, float32 master weights and two moments; ZeRO's 16 bytes a weight in bf16):
        weights     P x w     gradients  P x w     optimizer  12 P (/ dp if sharded)
        shard "full" divides weights and gradients by dp too
        activations (saved per layer / tp) x ceil(layers / pp) x min(pp, m) (1F1B keeps pp
                    microbatches in flight on the first stage), x (1 + (pp - 1) / (pp x vp))
                    when interleaved (Korthikanti et al. 2022, section 4.2.3), + the
                    epilogue's saved / tp

    model FLOPs     per token 6 N + 12 x layers x n_heads x head_dim x seq (PaLM, appendix B;
                    N the weights of the matmuls: every weight but the embedding table)
    MFU             model FLOPs x tokens / (step_s x chips x the dtype's peak)

Bandwidths: the target's all-reduce bus within a scale-up domain (interconnect.scale_up_chips:
an NVLink node, a TPU pod's ICI); a group larger than it crosses the scale-out network
(interconnect.scale_out_bytes_per_s, one NIC a chip). A target without them uses its bus for
every group, said in the notes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from hardware_models.cost.model import allreduce_cost
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


def _powers(limit: int) -> list[int]:
    return [1 << k for k in range(limit.bit_length()) if 1 << k <= limit]


def layouts(chips: int, global_batch: int, layers: int, fixed: dict) -> list[tuple[int, int, int, int]]:
    """(tp, pp, dp, microbatch) with tp x pp x dp = chips and dp x microbatch dividing the
    global batch; a value in `fixed` (tp, pp, dp, microbatch) is kept, the rest searched."""
    out = []
    for tp in [fixed["tp"]] if fixed.get("tp") else _powers(min(chips, MAX_SEARCH_TP)):
        for pp in [fixed["pp"]] if fixed.get("pp") else _powers(min(chips // tp, layers)):
            if chips % (tp * pp):
                continue
            dp = chips // (tp * pp)
            if fixed.get("dp") and fixed["dp"] != dp:
                continue
            for mb in [fixed["microbatch"]] if fixed.get("microbatch") else MICROBATCHES:
                if global_batch % (dp * mb) == 0:
                    out.append((tp, pp, dp, mb))
    return out


def check_layout(chips: int, global_batch: int, layers: int, fixed: dict) -> None:
    """Refuse a fixed layout that cannot hold, naming the rule (InvalidShape)."""
    for key, value in fixed.items():
        if value is not None and value < 1:
            raise InvalidShape("train", key, value, "must be an integer >= 1")
    if (fixed.get("vp") or 1) > 1:
        pp = fixed.get("pp")
        if not pp or pp < 2 or layers % (pp * fixed["vp"]):
            raise InvalidShape(
                "train", "vp", fixed["vp"], f"needs --pp >= 2 with pp x vp dividing the model's {layers} layers"
            )
    product = math.prod(fixed.get(k) or 1 for k in ("tp", "pp", "dp"))  # vp adds no chips
    if chips % product:
        raise InvalidShape("train", "chips", chips, f"must be a multiple of tp x pp x dp = {product}")
    if all(fixed.get(k) for k in ("tp", "pp", "dp")) and product != chips:
        raise InvalidShape("train", "chips", chips, f"must equal tp x pp x dp = {product}")
    if fixed.get("pp") and fixed["pp"] > layers:
        raise InvalidShape("train", "pp", fixed["pp"], f"at most the model's {layers} layers")
    if not layouts(chips, global_batch, layers, fixed):
        raise InvalidShape(
            "train",
            "global_batch",
            global_batch,
            "no layout divides it: dp x microbatch must divide the global batch "
            f"(microbatch one of {', '.join(map(str, MICROBATCHES))} unless given)",
        )


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
        if key not in self._cost:
            module = self.lowered(mb, recompute).parts[part].module
            # the embedding has no matmul to split: each chip of the group gathers its rows (1 chip's cost)
            plan = compile_plan(module, self.target, chips=1 if part == "prologue" else tp)
            est = estimate(module, self.target, part, plan)
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
            self._cost[key] = estimate(
                module, self.target, f"{part} adamw", compile_plan(module, self.target)
            ).total.time_s
        return self._cost[key]


def _bandwidth(target: Target, span: int) -> tuple[float, str]:
    """(bus bytes/s, which network) for a collective over `span` consecutive chips."""
    bus = target.get("fitted.allreduce_bus_bytes_per_s") or target["interconnect.allreduce_bus_bytes_per_s"]
    domain = target.get("interconnect.scale_up_chips")
    out = target.get("interconnect.scale_out_bytes_per_s")
    if domain and out and span > domain:
        return out, "scale-out"
    return bus, "scale-up"


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
    latency = target["schedule.collective_latency_s"]
    hidden = mb * seq * cfg.d_model * act_bytes
    tp_comm = n_ar * allreduce_cost(hidden, tp, _bandwidth(target, tp)[0], latency).time_s if tp > 1 else 0.0
    t_layer = part_s["block"] + tp_comm
    t_pro = part_s["prologue"]
    t_epi = part_s["epilogue"] + (
        allreduce_cost(hidden, tp, _bandwidth(target, tp)[0], latency).time_s if tp > 1 else 0
    )
    t_stage = (
        max(layers_per_stage * t_layer + t_pro, layers_per_stage * t_layer + t_epi)
        if pp > 1
        else (cfg.n_layers * t_layer + t_pro + t_epi)
    )
    t_p2p = 0.0
    if pp > 1:
        bw, _ = _bandwidth(target, tp * pp)
        t_p2p = vp * 2 * (latency + hidden / tp / bw)  # each tp chip sends its 1/tp (scatter/gather)
    pipeline_s = (m + (pp - 1) / vp) * (t_stage + t_p2p)
    bubble_s = (pp - 1) / vp * (t_stage + t_p2p)

    counts = {"prologue": 1, "block": cfg.n_layers, "epilogue": 0 if cfg.tie_embeddings else 1}
    total_weights = sum(weight_count(low.parts[p]) * counts[p] for p in PARTS if p != "epilogue") + (
        weight_count(low.parts["epilogue"]) - (0 if counts["epilogue"] else cfg.vocab * cfg.d_model)
    )
    chip_weights = math.ceil(total_weights / (tp * pp))
    grad_bytes = chip_weights * act_bytes
    dp_comm = 0.0
    if dp > 1:
        bw, _ = _bandwidth(target, tp * pp * dp)
        if layout.shard == "full":
            dp_comm = m * (3 * (dp - 1) / dp * grad_bytes / bw + 3 * latency)
        else:
            dp_comm = allreduce_cost(grad_bytes, dp, bw, latency).time_s
    exposed = max(0.0, dp_comm - pipeline_s)
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
        "weights": math.ceil(chip_weights * act_bytes / state_div),
        "gradients": math.ceil(grad_bytes / state_div),
        "optimizer": math.ceil(chip_weights * MASTER_BYTES / (dp if layout.shard != "none" else 1)),
        "activations": activations,
    }
    memory["total"] = sum(memory.values())
    memory["capacity"] = int(target.usable_main_memory_bytes)
    memory["weights_total"] = total_weights
    return terms, memory, part_s


def model_flops(cfg, weights: int, tokens: int, seq: int) -> float:
    """PaLM's model FLOPs of a step (appendix B): per token 6 N + 12 L H Q T, N the weights of
    the matmuls (all but the embedding table; a tied table is the LM head's)."""
    n = weights - (0 if cfg.tie_embeddings else cfg.vocab * cfg.d_model)
    return tokens * (6 * n + 12 * cfg.n_layers * cfg.n_heads * cfg.head_dim * seq)


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
    check_layout(chips, global_batch, cfg.n_layers, {**fixed, "vp": vp})
    parts = _Parts(lower, target)
    best, smallest, refused, count = None, None, [], 0
    for t, p, d, mb in layouts(chips, global_batch, cfg.n_layers, fixed):
        for rc in [recompute] if recompute else RECOMPUTE:
            for sh in [shard] if shard else SHARDS:
                for v in [vp] if vp else [v for v in VIRTUAL_STAGES if v == 1 or cfg.n_layers % (p * v) == 0]:
                    if v > 1 and p == 1:
                        continue
                    layout = Layout(t, p, d, mb, rc, sh, v)
                    try:
                        terms, memory, part_s = cost_layout(parts, target, cfg, layout, global_batch, seq, dtype_bytes)
                    except LandscapeError as err:  # the target's pipeline refused this tp (too few chips for SRAM)
                        refused.append(str(err))
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
            raise InvalidShape("train", "chips", chips, refused[0] if refused else "no layout could be costed")
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
