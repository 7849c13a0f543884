"""Peer predictors on the published serving rows: GenZ (genz-llm 0.0.16) and llm-analysis
(llm-analysis 0.2.2), each at its DEFAULT efficiencies, on every row of
hardware_models/serving_rows.py (ROWS). Runs under `.venv-peers/bin/python` (`make bench-peers`):
it imports neither torch, jax nor this project's packages. Prints one JSON object to stdout
({"ROW_ID": {"genz": float|null, "genz_reason": str, ...}}; a null says the tool has no model of
that hardware or option). How each row maps onto each tool's calls and defaults:
docs/benchmarks.md, "How the peers are run".

Usage: .venv-peers/bin/python benchmarks/peers.py [ROW_ID ...]   (or `make bench-peers`)
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import pathlib
import sys
import time
import tomllib
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_BATCH_CAP = 2048
TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def load_rows():
    """ROWS from hardware_models/serving_rows.py, loaded from its file (stdlib only): the
    hardware_models package itself is not imported."""
    path = ROOT / "hardware_models" / "serving_rows.py"
    spec = importlib.util.spec_from_file_location("_peers_serving_rows", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolves the module by name
    spec.loader.exec_module(module)
    return module.ROWS


MODELS = tomllib.loads((ROOT / "reference" / "models.toml").read_text())


def dims(model: str) -> dict:
    return MODELS[model]


class NoModel(Exception):
    """The tool has no model of this row's hardware or option: the figure is null."""


def figure(
    metric: str, batch: int, output_len: int, chips: int, ttft_s: float, decode_total_s: float, mean_step_s: float
) -> float:
    if metric == "ttft":
        return ttft_s
    if metric == "per_user":
        return 1.0 / mean_step_s
    throughput = batch * output_len / (ttft_s + decode_total_s)
    return throughput / chips if metric == "per_gpu" else throughput


# ----------------------------------------------------------------------------------------- GenZ
class GenZPeer:
    name = "genz"
    SYSTEMS = {"h100": "H100_GPU", "a100": "A100_80GB_GPU", "tpu-v5e": "TPUv5e"}
    MODEL_NAMES = {
        "llama-2-7b": "meta-llama/Llama-2-7B",
        "llama-2-13b": "meta-llama/Llama-2-13B",
        "llama-2-70b": "meta-llama/Llama-2-70B",
        "llama-3.1-8b": "meta-llama/Llama-3.1-8B",
        "llama-3.1-70b": "meta-llama/Llama-3.1-70B",
        "llama-3.1-405b": "meta-llama/Llama-3.1-405B",
    }
    BITS = {"fp8": "fp8", "bf16": "bf16", "fp16": "bf16", "int8": "int8"}

    def __init__(self):
        with contextlib.redirect_stdout(sys.stderr):
            import GenZ
            from GenZ.Models import get_configs
            from Systems.system_configs import system_configs
        self.genz = GenZ
        self.system_configs = system_configs
        for ours, theirs in self.MODEL_NAMES.items():
            c, d = get_configs(theirs), dims(ours)
            got = (
                c.num_decoder_layers,
                c.hidden_size,
                c.num_attention_heads,
                c.num_key_value_heads,
                int(c.intermediate_size),
                c.vocab_size,
                c.num_ffi,
            )
            want = (d["n_layers"], d["d_model"], d["n_heads"], d["n_kv_heads"], d["d_ff"], d["vocab"], 2)
            if got != want:
                raise SystemExit(f"GenZ config {theirs} {got} differs from models.toml {ours} {want}")

    def _call(self, fn, **kw):
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
            warnings.simplefilter("ignore")
            return fn(**kw)

    def _common(self, row, tp, bits):
        return dict(
            model=self.MODEL_NAMES[row.model], system_name=self.SYSTEMS[row.target], bits=bits, tensor_parallel=tp
        )

    def prefill_ms(self, row, tp, bits, batch) -> float:
        out = self._call(
            self.genz.prefill_moddeling, batch_size=batch, input_tokens=row.input_len, **self._common(row, tp, bits)
        )
        return out["Latency"]

    def decode_ms(self, row, tp, bits, batch, j) -> float:
        out = self._call(
            self.genz.decode_moddeling,
            batch_size=batch,
            input_tokens=row.input_len,
            output_tokens=j,
            Bb=1,
            **self._common(row, tp, bits),
        )
        return out["Latency"]

    def fits(self, row, tp, bits, batch) -> bool:
        try:
            self.decode_ms(row, tp, bits, batch, max(row.output_len, 1))
            self.prefill_ms(row, tp, bits, batch)
            return True
        except ValueError as e:
            if "would not fit" in str(e):
                return False
            raise

    def predict(self, row) -> tuple[float, str]:
        if row.target not in self.SYSTEMS:
            shipped = ", ".join(self.system_configs)
            raise NoModel(f"GenZ ships no {row.target} system config (Systems/system_configs.py: {shipped})")
        if row.model not in self.MODEL_NAMES:
            raise NoModel(f"no GenZ model config for {row.model}")
        bits = self.BITS[row.precision]
        system = self.SYSTEMS[row.target]
        notes = []
        probe = 1 if row.batch == "max" else row.batch
        if row.chips is None:
            tp = next((t for t in TP_CHOICES if self.fits(row, t, bits, probe)), None)
            if tp is None:
                raise NoModel(f"GenZ says {row.model} does not fit {max(TP_CHOICES)} x {system}")
            notes.append(f"chips not stated: TP={tp}, the fewest GenZ's memory check accepts")
        else:
            tp = row.chips
        if row.batch == "max":
            if not self.fits(row, tp, bits, 1):
                raise NoModel(f"GenZ says even batch 1 does not fit TP={tp} x {system}")
            lo, hi = 1, MAX_BATCH_CAP  # lo fits; find the largest fitting batch <= cap
            if self.fits(row, tp, bits, hi):
                lo = hi
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if self.fits(row, tp, bits, mid) else (lo, mid)
            batch = lo
            notes.append(
                f"batch max -> {batch} (largest batch GenZ's memory check accepts at "
                f"{row.input_len + row.output_len} tokens of cache"
                + (f", capped at {MAX_BATCH_CAP})" if batch == MAX_BATCH_CAP else ")")
            )
        else:
            batch = row.batch
        try:
            ttft_s = self.prefill_ms(row, tp, bits, batch) / 1e3
            steps = row.output_len - 1
            if steps >= 1:
                js = sorted({1, (1 + steps) // 2, steps})
                t = {j: self.decode_ms(row, tp, bits, batch, j) / 1e3 for j in js}
                total = 0.0
                for j in range(1, steps + 1):
                    a = max(p for p in js if p <= j)
                    b = min(p for p in js if p >= j)
                    total += t[a] if a == b else t[a] + (t[b] - t[a]) * (j - a) / (b - a)
                mean = total / steps
            else:
                total, mean = 0.0, self.decode_ms(row, tp, bits, batch, 1) / 1e3
        except ValueError as e:
            if "would not fit" in str(e):
                raise NoModel(
                    f"GenZ says batch {batch} does not fit TP={tp} x {system}: " + str(e).splitlines()[0]
                ) from None
            raise
        value = figure(row.metric, batch, row.output_len, tp, ttft_s, total, mean)
        how = (
            f"{system}, bits='{bits}', TP={tp}, batch={batch}, system_eff=1 (default), Bb=1; "
            f"ttft {ttft_s * 1e3:.3f} ms, mean decode step {mean * 1e3:.3f} ms"
        )
        return value, "; ".join(notes + [how])


# --------------------------------------------------------------------------------- llm-analysis
class LLMAnalysisPeer:
    name = "llm-analysis"
    GPUS = {"h100": "h100-sxm-80gb", "a100": "a100-sxm-80gb"}
    DTYPES = {
        "fp8": ("w8a8e16", None),
        "bf16": ("w16a16e16", None),
        "fp16": ("w16a16e16", None),
        "int8": ("w8a16e16", 1),
    }

    def __init__(self):
        with contextlib.redirect_stdout(sys.stderr):
            from llm_analysis import config
            from llm_analysis.analysis import LLMAnalysis
            from llm_analysis.logger import logger
        logger.setLevel(logging.ERROR)  # its INFO/WARNING logs are verbose; they go to stderr anyway
        self.config = config
        self.LLMAnalysis = LLMAnalysis

    def model_config(self, model: str):
        d = dims(model)
        ffn = 3 * d["d_ff"] // 2
        return self.config.ModelConfig(
            name=model,
            num_layers=d["n_layers"],
            n_head=d["n_heads"],
            hidden_dim=d["d_model"],
            vocab_size=d["vocab"],
            max_seq_len=d.get("max_positions"),
            num_key_value_heads=d["n_kv_heads"],
            ffn_embed_dim=ffn,
            expansion_ratio=ffn / d["d_model"],
            model_type="llama",
        )

    def infer(self, row, tp, batch) -> dict:
        dtype_name, kv_bytes = self.DTYPES[row.precision]
        analysis = self.LLMAnalysis(
            self.model_config(row.model),
            self.config.get_gpu_config_by_name(self.GPUS[row.target]),
            self.config.get_dtype_config_by_name(dtype_name),
            self.config.ParallelismConfig(tp_size=tp, pp_size=1, dp_size=1),
        )
        with contextlib.redirect_stdout(sys.stderr):
            return analysis.inference(
                batch_size_per_gpu=batch,
                seq_len=row.input_len,
                num_tokens_to_generate=row.output_len,
                kv_cache_dtype_bytes=kv_bytes,
            )

    def try_infer(self, row, tp, batch):
        try:
            return self.infer(row, tp, batch), ""
        except AssertionError as e:
            return None, str(e)

    def predict(self, row) -> tuple[float, str]:
        if row.target not in self.GPUS:
            shipped = ", ".join(sorted(self.config.gpu_configs))
            raise NoModel(f"llm-analysis ships no {row.target} config (gpu_configs: {shipped})")
        gpu = self.GPUS[row.target]
        dtype_name, kv_bytes = self.DTYPES[row.precision]
        notes = []
        probe = 1 if row.batch == "max" else row.batch
        if row.chips is None:
            tp = next((t for t in TP_CHOICES if self.try_infer(row, t, probe)[0] is not None), None)
            if tp is None:
                raise NoModel(f"llm-analysis says {row.model} does not fit {max(TP_CHOICES)} x {gpu}")
            notes.append(f"chips not stated: TP={tp}, the fewest llm-analysis's memory check accepts")
        else:
            tp = row.chips
        if row.batch == "max":
            first, why = self.try_infer(row, tp, 1)
            if first is None:
                raise NoModel(f"llm-analysis says batch 1 does not fit TP={tp} x {gpu}: {why}")
            dec, pre = first["decode_max_batch_size_per_gpu"], first["prefill_max_batch_size_per_gpu"]
            batch = max(1, min(dec, pre, MAX_BATCH_CAP))
            notes.append(
                f"batch max -> {batch} (min of its decode_max_batch_size_per_gpu {dec}, "
                f"prefill_max_batch_size_per_gpu {pre}, cap {MAX_BATCH_CAP})"
            )
        else:
            batch = row.batch
        out, why = self.try_infer(row, tp, batch)
        if out is None and row.batch == "max":  # its two limits can be off by one against its own asserts
            while out is None and batch > 1:
                batch -= 1
                out, why = self.try_infer(row, tp, batch)
            notes.append(f"lowered to {batch} to pass its memory assertions")
        if out is None:
            raise NoModel(f"llm-analysis says batch {batch} does not fit TP={tp} x {gpu}: {why}")
        ttft_s, step_s = out["prefill_latency"], out["decode_latency"]
        if row.metric == "ttft":
            value = ttft_s
        elif row.metric == "per_user":
            value = 1.0 / step_s
        else:
            value = out["total_tokens_per_sec"] / (tp if row.metric == "per_gpu" else 1)
        how = (
            f"{gpu}, dtype {dtype_name}"
            + (f", kv_cache_dtype_bytes={kv_bytes}" if kv_bytes else "")
            + f", tp_size={tp}, batch_size_per_gpu={batch}, default efficiencies (1.0); "
            f"prefill_latency {ttft_s * 1e3:.3f} ms, decode_latency {step_s * 1e3:.3f} ms"
        )
        return value, "; ".join(notes + [how])


def main(argv: list[str]) -> int:
    start = time.perf_counter()
    rows = load_rows()
    if argv:
        rows = tuple(r for r in rows if r.id in argv)
    peers = []
    for cls in (GenZPeer, LLMAnalysisPeer):
        t = time.perf_counter()
        peers.append(cls())
        log(f"{cls.name}: loaded in {time.perf_counter() - t:.1f}s")
    results: dict[str, dict] = {}
    for row in rows:
        entry: dict = {}
        for peer in peers:
            t = time.perf_counter()
            try:
                value, reason = peer.predict(row)
            except NoModel as e:
                value, reason = None, str(e)
            entry[peer.name] = value
            entry[f"{peer.name}_reason"] = reason
            log(f"{row.id} {peer.name}: {value} ({time.perf_counter() - t:.2f}s) {reason}")
        results[row.id] = entry
    log(f"{len(rows)} rows in {time.perf_counter() - start:.1f}s")
    json.dump(results, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
