"""The measured errors behind the tolerance table (reference/tolerance.py): every catalogue entry
small enough to run here (at most 200M weights: every kernel, block, decoder, tiny, gpt2-small)
at its defaults and at odd sizes, in every dtype, for three seeds, on both sides against the
float64 reference. Prints and writes the worst normwise error per dtype, in units of the dtype's
unit roundoff eps, with the run it came from, and the margin the table's rtol leaves over it.

Writes benchmarks/results/tolerance_margins.csv (one row per entry, shapes, dtype, seed and side)
on a full run. Usage: python benchmarks/tolerance_margins.py [ENTRY ...]
"""

from __future__ import annotations

import csv
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from reference.agreement import check_agreement  # noqa: E402
from reference.catalogue import CATALOGUE  # noqa: E402
from reference.dtypes import FLOAT_DTYPES, unit_roundoff  # noqa: E402
from reference.tolerance import tolerance_for  # noqa: E402

RESULTS = pathlib.Path(__file__).with_name("results") / "tolerance_margins.csv"
MAX_WEIGHTS = 200_000_000
SEEDS = (0, 1, 2)
ODD = 65  # an odd size for every extent a kernel exposes (the shape cases' 65)


def shape_sets(name: str) -> list[dict]:
    """The defaults, and for a kernel every size parameter at an odd value."""
    entry = CATALOGUE[name]
    sets = [{}]
    if entry.kind == "kernel":
        defaults = entry.resolve({})
        odd = {p: ODD for p, v in defaults.items() if isinstance(v, int) and not isinstance(v, bool) and v > 1}
        if odd:
            try:
                entry.resolve(odd)
                sets.append(odd)
            except Exception:  # an entry whose sizes are tied (heads x head_dim): its defaults only
                pass
    return sets


def main(names: list[str]) -> None:
    from landscape.cli import default_runners

    runners = default_runners()
    rows = []
    for name in names:
        entry = CATALOGUE[name]
        if entry.n_weights(entry.resolve({})) > MAX_WEIGHTS:
            continue
        for shapes in shape_sets(name):
            for dtype in FLOAT_DTYPES:
                if dtype not in entry.dtypes:
                    continue
                for seed in SEEDS:
                    result = check_agreement(name, shapes, dtype, seed, runners=runners)
                    for side in ("torch", "jax"):
                        err = result.errors[f"{side}_vs_ref"]
                        rows.append(
                            {
                                "entry": name,
                                "shapes": " ".join(f"{k}={v}" for k, v in shapes.items()) or "defaults",
                                "dtype": dtype,
                                "seed": seed,
                                "side": side,
                                "max_rel_eps": err.max_rel / unit_roundoff(dtype),
                            }
                        )
                print(
                    f"{name:14s} {dtype:9s} {rows[-1]['shapes']:30s} worst "
                    f"{max(r['max_rel_eps'] for r in rows if r['entry'] == name and r['dtype'] == dtype):6.2f} eps",
                    flush=True,
                )
    print()
    for dtype in FLOAT_DTYPES:
        mine = [r for r in rows if r["dtype"] == dtype]
        if not mine:
            continue
        worst = max(mine, key=lambda r: r["max_rel_eps"])
        rtol = tolerance_for(dtype).rtol / unit_roundoff(dtype)
        print(
            f"{dtype}: worst {worst['max_rel_eps']:.2f} eps ({worst['entry']} {worst['shapes']}, seed {worst['seed']}, "
            f"{worst['side']}); rtol {rtol:g} eps, {rtol / worst['max_rel_eps']:.1f}x the worst"
        )
    if names == list(CATALOGUE):
        RESULTS.parent.mkdir(exist_ok=True)
        with RESULTS.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            for r in rows:
                writer.writerow({**r, "max_rel_eps": f"{r['max_rel_eps']:.3f}"})
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(CATALOGUE))
