"""Serving under load from a model's name: the glue between the lowering (torch or jax, imported
inside functions) and hardware_models.serving. The Python API of `landscape serve`:

    from landscape.serve_load import serve, capacity
    from hardware_models.serving import EngineConfig, Workload, SLO
    deployment, result = serve("llama-3.1-8b", "h100", Workload(requests=2000, concurrency=64))
    result.summary["ttft_s"]["p90"], result.summary["tpot_s"]["mean"]
    best, trials, placed, alone = capacity("llama-3.1-8b", "h100", Workload(requests=400), SLO(2.0, 0.05))
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from hardware_models.serving import SLO, Deployment, EngineConfig, ServingResult, Workload, deploy, search, simulate

SERVE_SIDES = ("jax", "torch")  # torch-xla's driver starts a process per graph: too slow for a grid


@functools.lru_cache(maxsize=8)
def _lowering(model: str, side: str, precision: str) -> Callable[[dict], object]:
    from landscape.lowering import lower_named, precision_dtypes

    dtype, eight_bit = precision_dtypes(precision)

    @functools.cache
    def lower(key: tuple) -> object:
        module = lower_named(model, side, dict(key), dtype).module
        if eight_bit:
            from landscape.lowering import quantize

            module = quantize(module, eight_bit)
        return module

    return lambda shapes: lower(tuple(sorted(shapes.items())))


def _load(target):
    from hardware_models.target import Target, get_target

    return target if isinstance(target, Target) else get_target(target)


def check_lengths(model: str, specs, allow_beyond_context: bool = False) -> list[str]:
    """Every request's prompt + output against the model's context (reference.models.context_check)."""
    from reference.models import context_check

    longest = max(specs, key=lambda s: s.input_len + s.output_len)
    tokens = longest.input_len + longest.output_len
    note = context_check(
        model,
        tokens,
        f"a request of {longest.input_len:,} + {longest.output_len:,} = {tokens:,} tokens",
        "--input-len + --output-len (or the trace's lengths)",
        allow_beyond_context,
    )
    return [note] if note else []


def deployment(
    model: str,
    target,
    workload: Workload,
    engine: EngineConfig = EngineConfig(),
    *,
    side: str = "jax",
    precision: str = "bf16",
    chips: int | None = None,
) -> Deployment:
    """Chips, cache and step costs for serving `workload`'s requests (hardware_models.serving.deployment)."""
    from landscape.lowering import precision_bytes
    from reference.catalogue import get_entry
    from reference.errors import UnknownName
    from reference.models import get_model

    if side not in SERVE_SIDES:
        raise UnknownName("side for serve", side, SERVE_SIDES)
    target = _load(target)
    config, entry = get_model(model), get_entry(model)
    element, cache_element = precision_bytes(precision)
    specs = workload.specs()
    longest = max(s.input_len + s.output_len for s in specs)
    prompts = tuple(sorted({s.input_len for s in specs}))
    return deploy(
        _lowering(model, side, precision),
        target,
        model=model,
        weight_bytes=math.ceil(entry.n_weights(entry.resolve({})) * element),
        token_bytes=config.kv_cache_bytes(1, 1, cache_element),
        kv_heads=config.n_kv_heads,
        max_positions=config.max_positions,
        engine=engine,
        longest=longest,
        prompts=prompts,
        chips=chips,
        window=config.sliding_window,
    )


def serve(
    model: str,
    target,
    workload: Workload,
    engine: EngineConfig = EngineConfig(),
    *,
    side: str = "jax",
    precision: str = "bf16",
    chips: int | None = None,
    warmup: int = 0,
    stagger: bool = False,
    progress=None,
    placed: Deployment | None = None,
) -> tuple[Deployment, ServingResult]:
    """Simulate `workload` served by `model` on `target` (hardware_models.serving.simulate)."""
    placed = placed or deployment(model, target, workload, engine, side=side, precision=precision, chips=chips)
    result = simulate(
        workload.specs(),
        placed.costs,
        placed.engine,
        cache_blocks=placed.cache_blocks,
        concurrency=workload.in_flight,
        warmup=warmup,
        stagger=stagger,
        progress=progress,
        window=placed.window,
    )
    return placed, result


def capacity(
    model: str,
    target,
    workload: Workload,
    slo: SLO,
    engine: EngineConfig = EngineConfig(),
    *,
    mode: str = "rate",
    batch_caps: tuple[int, ...] | None = None,
    side: str = "jax",
    precision: str = "bf16",
    chips: int | None = None,
    warmup: int = 0,
    progress=None,
):
    """(best trial or None, every trial, deployment, one request alone's summary): the highest load under `slo`
    (hardware_models.serving.capacity), over the batch caps (default: the engine's)."""
    from dataclasses import replace

    caps = tuple(batch_caps or (engine.max_batch,))
    placed = deployment(
        model,
        target,
        workload.at(concurrency=1),
        replace(engine, max_batch=max(caps)),
        side=side,
        precision=precision,
        chips=chips,
    )
    alone = simulate(
        workload.at(concurrency=1).specs()[:1],
        placed.costs,
        placed.engine,
        cache_blocks=placed.cache_blocks,
        concurrency=1,
        window=placed.window,
    ).summary

    def run(load, cap):
        shaped = workload.at(rate=load) if mode == "rate" else workload.at(concurrency=int(load))
        return simulate(
            shaped.specs(),
            placed.costs,
            replace(placed.engine, max_batch=cap),
            cache_blocks=placed.cache_blocks,
            concurrency=shaped.in_flight,
            warmup=warmup,
            window=placed.window,
        ).summary

    best, trials = search(run, slo, mode=mode, batch_caps=caps, start=1 / alone["e2e_s"]["mean"], progress=progress)
    return best, trials, placed, alone
