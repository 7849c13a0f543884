"""Peer predictors on the published serving rows: GenZ (genz-llm 0.0.16) and llm-analysis
(llm-analysis 0.2.2), each at its DEFAULT efficiencies, on every row of
hardware_models/serving_rows.py (ROWS). Runs under `.venv-peers/bin/python` (`make bench-peers`):
it imports neither torch, jax nor this project's packages; serving_rows.py is loaded from its file
(it needs only the stdlib) and reference/models.toml is read with tomllib, as data.

Prints ONE JSON object to stdout, everything else (the tools' logs and warnings, timings) goes to
stderr:
    {"ROW_ID": {"genz": float|null, "genz_reason": str,
                "llm-analysis": float|null, "llm-analysis_reason": str}, ...}
A null means the tool has no model of that hardware or option (the reason says which); no number
is ever filled in by hand. A non-null reason says exactly how the figure was obtained.

Metric, from each tool's times (the row's unit):
    per_gpu     batch * output_len / (ttft + total decode time) / chips
    throughput  batch * output_len / (ttft + total decode time)   (static batch)
    per_user    1 / (mean decode step time), batch 1
    ttft        the prefill's time, in seconds

Row mapping, common to both tools:
    target      h100 -> H100 SXM 80GB, a100 -> A100 SXM 80GB, h200 -> H200 141GB, tpu-v5e -> TPU v5e,
                wse-3 -> Cerebras WSE-3, groq-lpu -> Groq LPU; each tool's own shipped config, or null
    chips       the tensor-parallel degree (pipeline 1, data/expert parallel 1); chips None: the
                fewest of 1, 2, 4, 8, 16, 32, 64 that the tool's own memory check accepts
    batch       the static batch; "max": the largest batch the tool says fits in memory at the
                row's full context (input_len + output_len), capped at 2048
    model       the dimensions of reference/models.toml (layers, d_model, heads, kv heads, d_ff,
                vocab); the published 3.3/3-70B and 3-8B names are the 3.1 configs, as in serving_rows

GenZ (package `GenZ`, with its `Systems.system_configs`):
    systems     h100 -> 'H100_GPU' (989 TFLOPS, 80 GB, 3400 GB/s, ICN 450), a100 -> 'A100_80GB_GPU'
                (312 TFLOPS, 80 GB, 2039 GB/s), tpu-v5e -> 'TPUv5e' (197 TFLOPS, 16 GB, 820 GB/s);
                no H200 ('GH200_GPU', 144 GB / 4900 GB/s, is a different part: not used), no WSE-3,
                no Groq LPU -> null
    models      GenZ's shipped configs by name, checked against models.toml at start-up (layers,
                d_model, heads, kv heads, d_ff, vocab, num_ffi=2 i.e. gated MLP):
                'meta-llama/Llama-2-7B', 'meta-llama/Llama-2-13B', 'meta-llama/Llama-2-70B',
                'meta-llama/Llama-3.1-8B', 'meta-llama/Llama-3.1-70B', 'meta-llama/Llama-3.1-405B'
                (not 'meta-llama/meta-llama-3.1-70b', which GenZ aliases to the Llama-2-70B config)
    precision   GenZ has one `bits` for weights, activations and KV cache: fp8 -> bits='fp8'
                (w8a8 + fp8 KV, compute x2), fp16/bf16 -> bits='bf16', int8 -> bits='int8' (int8
                weights, activations and KV; GenZ cannot keep activations at 16 bits)
    prefill     GenZ.prefill_moddeling(model=NAME, batch_size=B, input_tokens=input_len,
                system_name=SYSTEM, bits=BITS, tensor_parallel=TP)  -> ['Latency'] ms = ttft
    decode      GenZ.decode_moddeling(model=NAME, batch_size=B, input_tokens=input_len,
                output_tokens=j, Bb=1, system_name=SYSTEM, bits=BITS, tensor_parallel=TP)
                -> ['Latency'] ms = the step whose KV cache holds input_len + j tokens. Bb=1: greedy
                serving, one sequence per request (decode_moddeling's own default is Bb=4, a beam
                of 4, which would quadruple the decoded batch). The steps j = 1 .. output_len-1 (the
                first output token comes from the prefill) are summed from the steps at j = 1, the
                middle and output_len-1, linearly interpolated between them (the step is linear in
                the cache length within a roofline regime).
    defaults    system_eff=1 (GenZ's default; compute and memory efficiency 1), pipeline_parallel=1,
                expert_parallel=1, collective_strategy='GenZ', network_config=None,
                model_offload=False, debug=False
    fits        GenZ raises ValueError("All params would not fit on chip") when weights + KV cache
                per chip exceed the system's memory: that check is "fits" (for chips None, and for
                batch "max", by bisection on decode_moddeling at j = output_len)

llm-analysis (package `llm_analysis`):
    gpus        llm_analysis.config.get_gpu_config_by_name: h100 -> 'h100-sxm-80gb' (989 TFLOPS fp16,
                1979 int8/fp8, 3350 GB/s, 450 GB/s NVLink), a100 -> 'a100-sxm-80gb'; it ships no
                H200, TPU, WSE-3 or Groq config -> null
    models      llm_analysis.config.ModelConfig(name, num_layers, n_head, hidden_dim, vocab_size,
                max_seq_len, num_key_value_heads, ffn_embed_dim=3*d_ff/2, expansion_ratio=
                ffn_embed_dim/hidden_dim, model_type='llama') from models.toml: llm-analysis models
                an MLP as two matrices (2*hidden*ffn parameters), so 3/2*d_ff gives the gated
                (SwiGLU, three-matrix) MLP its true parameter count and FLOPs. Its shipped Llama
                configs (and its Hugging Face path) use ffn = 4*hidden, which miscounts the MLP.
                It counts one (shared) embedding matrix, its own convention, left as is.
    precision   dtype configs get_dtype_config_by_name: fp8 -> 'w8a8e16' (8-bit weights and
                activations, 8-bit KV cache by its default = activation bits, GEMMs at
                peak_i8_TFLOPS), fp16/bf16 -> 'w16a16e16', int8 -> 'w8a16e16' with
                kv_cache_dtype_bytes=1 (int8 weights and KV cache)
    call        LLMAnalysis(model_config, gpu_config, dtype_config,
                ParallelismConfig(tp_size=TP, pp_size=1, dp_size=1)) with its default efficiencies
                (flops_efficiency, hbm_memory_efficiency, intra/inter_node_memory_efficiency all
                None/1.0 -> 1), then .inference(batch_size_per_gpu=B, seq_len=input_len,
                num_tokens_to_generate=output_len) with its defaults (use_kv_cache=True,
                layernorm_dtype_bytes=2, ds_zero NONE). batch_size_per_gpu is the batch of the one
                tensor-parallel replica.
    figures     ttft = ['prefill_latency']; throughput = ['total_tokens_per_sec'] = B * output_len /
                (prefill_latency + output_len * decode_latency) (the tool's own end-to-end figure:
                output_len decode steps, each at the final cache length input_len + output_len);
                per_user = 1 / ['decode_latency'] at B = 1
    fits        its assertions ("model is too large", "... too large to fit in GPU memory"); batch
                "max" = min(['decode_max_batch_size_per_gpu'], ['prefill_max_batch_size_per_gpu'],
                2048) from a batch-1 run, then a run at that batch

Usage: .venv-peers/bin/python benchmarks/peers.py [ROW_ID ...]   (or `make bench-peers`)
GenZ writes its operator CSVs under /tmp/genz/data/ (its fixed DATA_PATH).
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
