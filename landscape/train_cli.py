"""`landscape train`: a training step's time, tokens/s, MFU and memory per chip on a target
(registered on the `landscape` group by landscape/cli.py). Input is checked before torch or jax
is imported; the parts of the step are lowered by the side's compiler and costed by the target's
pipeline (hardware_models/train.py writes down every term).
"""

from __future__ import annotations

import click

from landscape.lowering import TRAIN_PRECISIONS, TRAIN_SIDES
from landscape.options import SIZE, DTypeParam, check_model, load_target, model_option, print_json
from reference.training import RECOMPUTE

SHARD_CHOICES = ("none", "optimizer", "full")  # hardware_models.train.SHARDS (not imported: it loads the cost model)


@click.command()
@click.option(
    "--model", "model_name", required=True, callback=model_option, help="A published model (llama-3.1-8b, ...)."
)
@click.option("--target", "target_name", required=True, help="A target from `landscape targets`.")
@click.option("--chips", type=SIZE, required=True, help="Chips (wafers) the step runs on: tp x pp x dp.")
@click.option("--global-batch", "global_batch", type=SIZE, required=True, help="Sequences in one optimizer step.")
@click.option("--seq", type=SIZE, default=4096, show_default=True, help="Tokens per sequence.")
@click.option(
    "--precision",
    type=DTypeParam(TRAIN_PRECISIONS, short=True, kind="precision"),
    default="bf16",
    show_default=True,
    help="bf16 or fp16: weights, activations and gradients; float32 master weights and Adam moments beside them.",
)
@click.option(
    "--recompute",
    type=click.Choice(RECOMPUTE),
    default=None,
    help="Activation recomputation: none, selective (only matmul outputs saved) or full (only each layer's "
    "input); default: chosen by cost.",
)
@click.option(
    "--shard",
    type=click.Choice(SHARD_CHOICES),
    default=None,
    help="Data-parallel sharding of the state: none, optimizer (ZeRO-1) or full (FSDP / ZeRO-3); default: chosen.",
)
@click.option("--tp", type=SIZE, default=None, help="Tensor-parallel chips; default: chosen by cost.")
@click.option("--pp", type=SIZE, default=None, help="Pipeline stages (1F1B); default: chosen by cost.")
@click.option("--dp", type=SIZE, default=None, help="Data-parallel replicas; default: chips / (tp x pp).")
@click.option(
    "--vp", type=SIZE, default=None, help="Virtual pipeline stages a chip (interleaved 1F1B); default: chosen."
)
@click.option("--microbatch", type=SIZE, default=None, help="Sequences per microbatch; default: chosen (1, 2, 4 or 8).")
@click.option("--side", type=click.Choice(TRAIN_SIDES), default="jax", show_default=True)
@click.option(
    "--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE", help="Override a target quantity; repeatable."
)
@click.option(
    "--allow-beyond-context",
    "allow_beyond_context",
    is_flag=True,
    help="Allow a --seq beyond the model's context length (a RoPE model only); the output says so.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def train(
    model_name,
    target_name,
    chips,
    global_batch,
    seq,
    precision,
    recompute,
    shard,
    tp,
    pp,
    dp,
    vp,
    microbatch,
    side,
    settings,
    allow_beyond_context,
    as_json,
) -> None:
    """Predict a training step of MODEL on CHIPS chips of a target: step time, tokens/s, MFU, memory.

    Each part of the step (embedding, one layer, the head with its cross-entropy, each forward
    and backward; AdamW over each part's weights) is lowered by the side's compiler (JAX:
    jax.vjp and optax; PyTorch: AOTAutograd's joint graph) and costed by the target's pipeline.
    The layout (tensor, pipeline and data parallelism, microbatch, recomputation, sharding) is
    the fastest that fits a chip's memory, unless given.

    \b
    step_s                 the pipeline of microbatches + exposed gradient sync + the optimizer
    tokens_per_s_per_chip  global batch x seq / step_s / chips
    mfu                    PaLM's model FLOPs (6N + 12 L H Q T a token) / (step_s x chips x peak)
    memory                 weights, gradients, optimizer state and saved activations a chip
    """
    from hardware_models.train import MICROBATCHES, check_layout, predict_training
    from landscape.lowering import training_lowerer
    from reference.catalogue import get_entry
    from reference.dtypes import get_dtype
    from reference.models import context_check, get_model

    check_model(model_name)
    target = load_target(target_name, settings)
    cfg = get_model(model_name)
    dtype = get_dtype(precision, TRAIN_PRECISIONS)
    note = context_check(model_name, seq, f"--seq {seq:,}", "--seq", allow_beyond_context)
    check_layout(chips, global_batch, cfg, {"tp": tp, "pp": pp, "dp": dp, "microbatch": microbatch, "vp": vp})
    # the largest microbatch's graphs, checked now (int64 extents), before any lowering
    get_entry(model_name).resolve({"batch": microbatch or max(MICROBATCHES), "seq": seq})
    result = predict_training(
        training_lowerer(model_name, side, seq, precision),
        target,
        cfg,
        chips=chips,
        global_batch=global_batch,
        seq=seq,
        dtype_bytes=int(dtype.bytes),
        peak_flop_per_s=target.peak_16bit_flop_per_s,
        recompute=recompute,
        shard=shard,
        tp=tp,
        pp=pp,
        dp=dp,
        microbatch=microbatch,
        vp=vp,
        side=side,
    )
    data = result.to_dict()
    if note:
        data["notes"].append(note)
    if as_json:
        print_json(data)
        return
    render_training(data, dtype.short)


def render_training(data: dict, precision: str) -> None:
    from reference.units import format_bytes, format_seconds, plural

    lay, t, mem = data["layout"], data["terms"], data["memory"]
    click.echo(
        f"{data['model']} training on {data['target']} ({plural(data['chips'], 'chip')}, {precision}, global batch "
        f"{data['global_batch']} x {data['seq']:,} tokens, {data['side']} lowering)\n"
        f"  layout                tp {lay['tp']} x pp {lay['pp']} x dp {lay['dp']}"
        + (f" (vp {lay['vp']})" if lay["vp"] > 1 else "")
        + f", microbatch {lay['microbatch']} "
        f"({data['microbatches']} a replica), recompute {lay['recompute']}, shard {lay['shard']} "
        f"(the fastest of {data['candidates']} that fit)\n"
        f"  step                  {format_seconds(data['step_s']):>10}\n"
        f"    pipeline            {format_seconds(t['pipeline_s']):>10}   (layer {format_seconds(t['t_layer'])}, "
        f"stage {format_seconds(t['t_stage'])}, bubble {format_seconds(t['bubble_s'])})\n"
        f"    gradient sync       {format_seconds(t['exposed_dp_s']):>10}   exposed of {format_seconds(t['dp_comm_s'])}\n"
        f"    optimizer           {format_seconds(t['optimizer_s']):>10}\n"
        f"  tokens/s              {data['tokens_per_s']:>10,.0f}   ({data['tokens_per_s_per_chip']:,.0f} a chip)\n"
        f"  MFU                   {data['mfu']:>10.1%}\n"
        f"  memory a chip         {format_bytes(mem['total']):>10} of {format_bytes(mem['capacity'])}   (weights "
        f"{format_bytes(mem['weights'])}, gradients {format_bytes(mem['gradients'])}, optimizer "
        f"{format_bytes(mem['optimizer'])}, activations {format_bytes(mem['activations'])})"
    )
    for note in data["notes"]:
        click.echo(f"  note: {note}")
