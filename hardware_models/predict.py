"""predict_inference: how fast a lowered LLM serves on a target, from its prefill and decode graphs.

Both graphs are compiled and costed by the target's own pipeline (`estimate`), not by a closed
form; the decode graph is the last step's (its KV cache holds input + output tokens), so
`decode_step_s` is an upper bound on the average step and the chip count covers the whole
cache. Prefill then runs on the same chips.

    ttft_s                   = the prefill graph's time (it produces the first token)
    tokens_per_s_per_user    = 1 / decode_step_s
    throughput_tokens_per_s  = batch / decode_step_s
    bottleneck               = the largest of the decode step's compute, memory and schedule time
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.cost.model import Estimate
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import Target
from reference.ir import Module


@dataclass(frozen=True)
class Prediction:
    model: str
    target: str
    batch: int
    input_len: int
    output_len: int
    chips: int
    ttft_s: float
    decode_step_s: float
    kv_cache_bytes: int
    kv_cache_location: str
    bottleneck: str
    prefill: Estimate
    decode: Estimate

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1 / self.decode_step_s

    @property
    def throughput_tokens_per_s(self) -> float:
        return self.batch / self.decode_step_s

    def to_dict(self) -> dict:
        def summary(est: Estimate) -> dict:
            d = est.to_dict()
            return {k: d[k] for k in ("total_time_s", "compute_s", "memory_s", "schedule_s", "bytes", "bottleneck_counts", "kernels", "notes")}

        return {
            "model": self.model, "target": self.target, "batch": self.batch, "input_len": self.input_len,
            "output_len": self.output_len, "chips": self.chips, "ttft_s": self.ttft_s, "decode_step_s": self.decode_step_s,
            "tokens_per_s_per_user": self.tokens_per_s_per_user, "throughput_tokens_per_s": self.throughput_tokens_per_s,
            "kv_cache_bytes": self.kv_cache_bytes, "kv_cache_location": self.kv_cache_location, "bottleneck": self.bottleneck,
            "prefill": summary(self.prefill), "decode": summary(self.decode),
        }


def predict_inference(prefill: Module, decode: Module, target: Target, *, model: str, batch: int, input_len: int,
                      output_len: int, kv_cache_bytes: int, chips: int | None = None) -> Prediction:
    """Serve-time prediction from the two lowered graphs of one model (see module doc).

    Args:
        prefill: the model lowered for `input_len` tokens (mode prefill), e.g. a `Lowering.module`.
        decode: the model lowered for one token against a cache of `input_len + output_len`.
        target: a loaded target; `chips` forces the chip (wafer) count.
        kv_cache_bytes: the cache at its full length (`ModelConfig.kv_cache_bytes`).

    Raises:
        UnsupportedDtype, InvalidShape: a type the target lacks; fewer chips than the model needs.
    """
    decode_plan = compile_plan(decode, target, chips=chips)
    used = decode_plan.partition.chips if decode_plan.partition else 1
    prefill_plan = compile_plan(prefill, target, chips=used if decode_plan.partition else chips)
    decode_est = estimate(decode, target, f"{model} decode", decode_plan)
    prefill_est = estimate(prefill, target, f"{model} prefill", prefill_plan)
    unit = target.family_record.chip_unit  # what --chips counts
    location = target.main_memory_level + (f" across {used} {unit}s" if used > 1 else "")
    return Prediction(model, target.name, batch, input_len, output_len, used, prefill_est.total.time_s,
                      decode_est.total.time_s, kv_cache_bytes, location, decode_est.bottleneck, prefill_est, decode_est)
