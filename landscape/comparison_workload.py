"""What `landscape compare` compares, stated once: the entry, its shapes, the dtype, the phase and
each side's compiler. The terminal title, report.json and report.html all print this record.

The default is a realistic workload, not a toy: one Llama-3.1-8B layer (the catalogue's `block`
at llama-3.1-8b's published dimensions: 32 heads of 128, 8 KV heads, d_ff 14336), in bfloat16,
run twice: a prefill of 2048 tokens (large matmuls, compute-bound) and one decode step against a
2048-token KV cache (weights streamed for one token, memory-bound), where the small kernels show
what launching, filling and draining cost (schedule-bound). Names, shapes and the dtype are
checked here, before torch or jax is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_MODEL = "llama-3.1-8b"  # its layer is the default workload
DEFAULT_TOKENS = 2048  # prefill length, and the decode step's KV-cache length
PHASES = ("prefill", "decode")
# How each side's program reaches StableHLO (pytorch_side/lower.py, jax_side/lower.py, torchxla_side/).
COMPILERS = {
    "torch": "torch.export → torch-mlir → StableHLO",
    "jax": "jax.jit → StableHLO",
    "torch-xla": "torch.export → torch-xla (XLA's CPU device) → StableHLO",
}


@dataclass(frozen=True)
class Workload:
    """One program both sides lower: a catalogue entry at resolved shapes, a dtype and a phase.

    Attributes:
        entry: the catalogue entry lowered ("block").
        label: how the report names it ("one llama-3.1-8b layer", or the entry's name).
        dtype: the canonical dtype ("bfloat16").
        shapes: the resolved shape parameters, mode included where the entry has one.
        phase: "prefill", "decode", or None for an entry without phases (a kernel such as mlp).
        notes: what the output must say about the workload (a length beyond the model's context).
    """

    entry: str
    label: str
    dtype: str
    shapes: dict = field(default_factory=dict)
    phase: str | None = None
    notes: tuple[str, ...] = ()

    def phase_text(self) -> str:
        """The phase in words: 'prefill of 2048 tokens', 'decode: 1 token against a 2048-token KV cache'."""
        s = self.shapes
        batch = f"{s['batch']} × " if s.get("batch", 1) != 1 else ""
        if self.phase == "prefill":
            return f"prefill of {batch}{s['seq']} tokens"
        if self.phase == "decode":
            return f"decode: {batch}1 new token against a {s['seq']}-token KV cache ({s['seq'] - 1} past + the new one)"
        return "no phase (a kernel)"

    def shape_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.shapes.items() if k != "mode")

    def title(self) -> str:
        """One line: what, in which dtype, which phase."""
        what = self.label if self.label == self.entry else f"{self.label} ({self.entry})"
        return f"{what}, {self.dtype}, {self.phase_text()}; {self.shape_text()}"

    def to_dict(self, sides: tuple[str, ...] = ("torch", "jax")) -> dict:
        return {
            "entry": self.entry,
            "label": self.label,
            "dtype": self.dtype,
            "shapes": dict(self.shapes),
            "phase": self.phase,
            "phase_text": self.phase_text(),
            "compilers": {s: COMPILERS[s] for s in sides},
            "notes": list(self.notes),
        }


def default_layer_shapes() -> dict:
    """The `block` entry's shapes for one layer of DEFAULT_MODEL, at DEFAULT_TOKENS tokens."""
    from reference.models import get_model

    cfg = get_model(DEFAULT_MODEL)
    return {
        "batch": 1,
        "seq": DEFAULT_TOKENS,
        "n_heads": cfg.n_heads,
        "n_kv_heads": cfg.n_kv_heads,
        "head_dim": cfg.head_dim,
        "d_ff": cfg.d_ff,
        "style": cfg.style,
    }


def plan_workloads(
    name: str | None, overrides: dict, dtype: str, phase: str | None = None, allow_beyond_context: bool = False
) -> list[Workload]:
    """The workloads `compare` runs, checked without importing torch or jax.

    Args:
        name: a catalogue entry or model; None for the default (one Llama-3.1-8B layer).
        overrides: `--shape` values, applied on top of the defaults.
        dtype: a canonical dtype name.
        phase: "prefill", "decode" or "both"; None (not given) is "both" where the entry has a
            mode. A `--shape mode=...` override picks one phase.
        allow_beyond_context: accept a model's `seq` beyond its context length (for the default
            workload, llama-3.1-8b's), with a note in each workload; refused otherwise.

    Raises:
        UnknownName, InvalidShape, UnsupportedDtype: a bad name, shape or dtype.
        MalformedInput: prefill or decode asked of an entry without phases, or a --phase that
            contradicts `--shape mode=...`.
        BeyondContext: seq beyond the model's context without allow_beyond_context.
    """
    from reference.catalogue import get_entry
    from reference.errors import MalformedInput
    from reference.models import context_check

    entry = get_entry(name or "block")
    base = default_layer_shapes() if name is None else {}
    label = f"one {DEFAULT_MODEL} layer" if name is None else entry.name
    if not any(p.name == "mode" for p in entry.params):
        if phase in PHASES:
            raise MalformedInput(
                f"{entry.name} has no phases (no mode parameter), so --phase {phase} does not apply; "
                f"phases exist for block, decoder and the models"
            )
        phases: tuple[str | None, ...] = (None,)
    elif "mode" in overrides:
        phases = (entry.param("mode").parse(entry.name, overrides["mode"]),)
        if phase in PHASES and phase != phases[0]:
            raise MalformedInput(f"--phase {phase} contradicts --shape mode={phases[0]}; give one of them")
    else:
        phases = PHASES if phase in (None, "both") else (phase,)
    entry.check_dtype(dtype)
    out = []
    for ph in phases:
        shapes = entry.resolve({**base, **overrides, **({"mode": ph} if ph else {})})
        model = entry.name if entry.kind == "model" else DEFAULT_MODEL if name is None else None
        note = (
            context_check(model, shapes["seq"], f"seq={shapes['seq']}", "--shape seq", allow_beyond_context)
            if model
            else None
        )
        out.append(Workload(entry.name, label, dtype, shapes, ph, (note,) if note else ()))
    return out


def compare_workload(
    workload: Workload,
    targets: list,
    chips: int | None = None,
    compile_xla: bool = False,
    progress=None,
    strict_dtypes: bool = False,
    sides: tuple[str, ...] = ("torch", "jax"),
    without: tuple[str, ...] = (),
):
    """Lower the workload on each side (torch and jax, or with torch-xla too) and compare the
    programs on every target (`strict_dtypes`: refuse a type a target lacks instead of costing
    its emulation; `without`: passes left out, a what-if).

    Returns:
        (hardware_models.comparison.Comparison, {side: Lowering}).
    """
    from hardware_models.comparison import compare_programs
    from landscape.lowering import lower_named

    lowered = {}
    for side in sides:
        lowered[side] = lower_named(
            workload.entry, side, workload.shapes, workload.dtype, compile_xla=compile_xla and side == "jax"
        )
        if progress:
            progress(f"lowered {side}")
    described = workload.to_dict(sides)  # with what each lowering changed or left out (torch-xla's rewrites)
    described["notes"] += [f"{side}: {note}" for side, low in lowered.items() for note in low.notes]
    if without:
        described["without"] = list(without)
        described["notes"].append(
            f"compiled without {', '.join(without)} (a what-if: each target's compiler runs "
            "it where its pipeline has it)"
        )
    result = compare_programs(
        lowered,
        targets,
        workload.entry,
        chips,
        progress=progress,
        workload=described,
        strict_dtypes=strict_dtypes,
        without=without,
    )
    return result, lowered
