"""The lowering glue that the CLI and the benchmarks share: a catalogue entry or a published
model lowered on one side, a StableHLO file read as a lowering, and a model's prefill and
decode graphs lowered for serving. torch and jax are imported inside the functions.
"""

from __future__ import annotations

from reference.dtypes import FLOAT_DTYPES, get_dtype

SIDES = ("torch", "jax", "torch-xla")  # torch-xla: the third path, where .venv-torchxla is built (make torch-xla)


def available_sides() -> tuple[str, ...]:
    """The paths this machine can lower: torch and jax, and torch-xla where its venv is built."""
    from torchxla_side import available

    return SIDES if available() else SIDES[:2]


# predict's --precision, as canonical names of reference.dtypes (shown by their short names: bf16,
# fp16, fp8, int8). A float type is what the model is lowered in; an 8-bit one means W8A8 on a
# bfloat16 model: weights, KV cache and matmul inputs in 8 bits, everything else in bfloat16.
PRECISIONS = ("bfloat16", "float16", "float8_e4m3fn", "int8", "float4_e2m1fn")
W8A8_BASE = "bfloat16"
# The KV cache's type where it differs from the weights': NVFP4/MXFP4 serving keeps it in fp8
# (TensorRT-LLM's and vLLM's fp4 recipes quantize weights and activations to fp4, the cache to fp8).
CACHE_TYPE = {"f4E2M1FN": "f8E4M3FN"}


def precision_dtypes(precision: str) -> tuple[str, str | None]:
    """(the dtype the model is lowered in, the MLIR type quantize_weights gives weights, KV cache
    and matmul inputs, or None) for any spelling of a precision: "fp8" -> ("bfloat16", "f8E4M3FN").

    Raises:
        UnknownName: not one of PRECISIONS.
    """
    dtype = get_dtype(precision, PRECISIONS)
    return (dtype.name, None) if dtype.name in FLOAT_DTYPES else (W8A8_BASE, dtype.mlir)


def precision_bytes(precision: str) -> tuple[float, float]:
    """(bytes of a weight element, bytes of a KV cache element) at `precision`: fp4 -> (0.5, 1)."""
    dtype = get_dtype(precision, PRECISIONS)
    cache = CACHE_TYPE.get(dtype.mlir)
    return dtype.bytes, (get_dtype(cache).bytes if cache else dtype.bytes)


def quantize(module, element: str):
    """quantize_weights at a precision's type, the KV cache in CACHE_TYPE's where it has one."""
    from hardware_models.passes.quantize_weights import quantize_weights

    return quantize_weights(module, element, CACHE_TYPE.get(element))


def lower_named(name: str, side: str, shapes: dict, dtype: str, compile_xla: bool = False, flat: bool = False):
    """Lower a catalogue entry or model on one side; returns a `reference.lowering.Lowering`.

    Published models lower regionally (embedding, one block called `layers` times, head) unless
    `flat`; kernels and the `decoder` entry lower flat. The xla stage needs a flat lowering.

    Raises:
        UnknownName, InvalidShape: bad name or shapes.
        LoweringFailed: the framework's compiler failed.
        PathUnavailable: torch-xla asked for where its venv is not built.
    """
    from reference.catalogue import get_entry

    entry = get_entry(name)
    resolved = entry.resolve(shapes)
    entry.check_dtype(dtype)
    regional = entry.kind == "model" and not flat and not compile_xla
    if side == "torch":
        from pytorch_side.lower import lower_entry, lower_regional

        return lower_regional(entry.name, resolved, dtype) if regional else lower_entry(entry.name, resolved, dtype)
    if side == "torch-xla":
        from torchxla_side import lower_entry, lower_regional

        return (
            lower_regional(entry.name, resolved, dtype)
            if regional
            else lower_entry(entry.name, resolved, dtype, compile_xla)
        )
    from jax_side.lower import lower_entry, lower_regional

    if regional:
        return lower_regional(entry.name, resolved, dtype)
    return lower_entry(entry.name, resolved, dtype, compile_xla=compile_xla)


def lowering_from_file(path: str):
    """A StableHLO text file as a `reference.lowering.Lowering` (side "file", named by the file's
    stem), verified. The file is read defensively (`reference.ir.limits`): a regular file or a
    pipe, at most 64 MiB, UTF-8; nesting and recursion are refused before anything walks the IR.

    Raises:
        MalformedInput: the file cannot be read, is a directory or a device, or is too large.
        MalformedIR: not UTF-8 (naming the offset of the first bad byte), not StableHLO (MLIR's
            line and column), nested too deep, recursive, or breaking a shape rule.
    """
    from pathlib import Path

    from reference.ir import parse_stablehlo, verify
    from reference.ir.limits import read_stablehlo_file
    from reference.lowering import Lowering

    text = read_stablehlo_file(path)
    return Lowering("file", Path(path).stem or "file", {"stablehlo": text}, verify(parse_stablehlo(text)))


def lower_for_serving(model_name: str, side: str, batch: int, input_len: int, output_len: int, precision: str = "bf16"):
    """(prefill IR, decode graphs, KV-cache bytes) of a published model, as `predict_inference` takes
    them: the decode graphs are (cache length, IR) at `hardware_models.predict.decode_lengths`.

    The last decode step runs against a cache of input + output - 1 tokens, and the cache is sized
    for input + output; fp8 and int8 go through `quantize_weights` (weights, KV cache and matmul
    inputs in 8 bits), fp4 too (weights and their matmuls' inputs in 4 bits, the cache in fp8).
    """
    from hardware_models.predict import decode_lengths
    from reference.models import get_model

    dtype, eight_bit = precision_dtypes(precision)
    lengths = decode_lengths(input_len, output_len)
    shapes = [
        {"batch": batch, "seq": input_len},
        *({"batch": batch, "seq": length, "mode": "decode"} for length in lengths),
    ]
    if side == "torch-xla":  # one driver process for the prefill and every decode step (its start is seconds)
        from reference.catalogue import get_entry
        from torchxla_side.lower import lower_regional_many

        entry = get_entry(model_name)
        entry.check_dtype(dtype)
        modules = [low.module for low in lower_regional_many(entry.name, [entry.resolve(s) for s in shapes], dtype)]
    else:
        modules = [lower_named(model_name, side, s, dtype).module for s in shapes]
    prefill, decodes = modules[0], list(zip(lengths, modules[1:]))
    if eight_bit:
        prefill = quantize(prefill, eight_bit)
        decodes = [(length, quantize(module, eight_bit)) for length, module in decodes]
    cache_bytes = get_model(model_name).kv_cache_bytes(batch, input_len + output_len, precision_bytes(precision)[1])
    return prefill, decodes, cache_bytes


# train's --precision: the dtype the model is trained in (mixed precision: float32 master
# weights and moments beside it, reference/training.py).
TRAIN_PRECISIONS = ("bfloat16", "float16")
TRAIN_SIDES = ("jax", "torch")


def training_lowerer(model_name: str, side: str, seq: int, precision: str = "bf16"):
    """(microbatch, recompute) -> the step's TrainParts on one side, as `predict_training` takes it.

    Raises:
        UnknownName: a precision or side train does not take.
    """
    from reference.errors import UnknownName
    from reference.models import get_model

    dtype = get_dtype(precision, TRAIN_PRECISIONS).name
    if side not in TRAIN_SIDES:
        raise UnknownName("side for train", side, TRAIN_SIDES)
    cfg = get_model(model_name)
    if side == "torch":
        from pytorch_side.train import lower_train_parts
    else:
        from jax_side.train import lower_train_parts
    return lambda microbatch, recompute: lower_train_parts(cfg, microbatch, seq, dtype, recompute)
