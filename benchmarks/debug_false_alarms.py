"""False alarms of `landscape debug` over the clean catalogue: every entry that runs (under
MAX_WEIGHTS weights), every dtype, at its defaults and with every size parameter at 1, 63, 65
and 129 (where the entry accepts it), on the five families' representative targets, with no
fault planted. A clean program must diverge at no rung from R1 to R6, whose executors compute
what the rung below computes: a divergence there is a false alarm. R7 runs the program in the
target's own types (Spyre runs f32 as f16), so a clean program that R7 finds beyond the dtype's
tolerance is a finding about the target, listed apart. Writes
benchmarks/results/debug_false_alarms_SIDE.csv and prints both; exits 1 on a false alarm.

    python benchmarks/debug_false_alarms.py [--side torch|jax] [NAME ...]
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from hardware_models.families import representative_targets  # noqa: E402
from landscape.debug import debug  # noqa: E402
from reference.agreement import FRAMEWORK_BYTES, run_memory_bytes  # noqa: E402
from reference.catalogue import CATALOGUE  # noqa: E402
from reference.dtypes import FLOAT_DTYPES  # noqa: E402

RESULTS = pathlib.Path(__file__).with_name("results")  # debug_false_alarms_SIDE.csv
MAX_WEIGHTS = 2_000_000  # the interpreter runs every op in numpy: small programs only
MAX_RUN_BYTES = 200_000_000  # and keeps every op's values: attention at 129 heads x 129 tokens is skipped
ODD_SIZES = (1, 63, 65, 129)


def shape_sets(name: str) -> list[dict]:
    """The defaults, and for a kernel every size parameter at each odd size (where accepted)."""
    entry = CATALOGUE[name]
    sets = [{}]
    if entry.kind != "kernel":
        return sets
    defaults = entry.resolve({})
    sizes = [p for p, v in defaults.items() if isinstance(v, int) and not isinstance(v, bool) and v > 1]
    for size in ODD_SIZES:
        odd: dict = {}
        for p in sizes:  # greedily, every size parameter the entry accepts at this size beside the others
            try:
                resolved = entry.resolve({**odd, p: size})
            except Exception:  # noqa: BLE001 - tied sizes (heads x head_dim) or bounded ones keep their default
                continue
            if (
                entry.n_weights(resolved) <= MAX_WEIGHTS
                and run_memory_bytes(entry, resolved, "float32") - FRAMEWORK_BYTES <= MAX_RUN_BYTES
            ):
                odd[p] = size
        if odd:
            sets.append(odd)
    return sets


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--side", choices=("torch", "jax"), default="torch")
    args = parser.parse_args()
    names = args.names or [n for n, e in CATALOGUE.items() if e.kind == "kernel" or n == "tiny"]
    targets = representative_targets()
    rows, alarms, findings, start = [], [], [], time.perf_counter()
    for name in names:
        for dtype in FLOAT_DTYPES:
            for shapes in shape_sets(name):
                cache: dict = {}
                for target in targets:
                    t = time.perf_counter()
                    f = debug(name, target, args.side, shapes, dtype, cache=cache)
                    worst = max(
                        (r.error / r.gate for r in f.rungs if r.ran and r.error is not None and r.gate), default=0.0
                    )
                    rows.append(
                        {
                            "entry": name,
                            "dtype": dtype,
                            "shapes": " ".join(f"{k}={v}" for k, v in shapes.items()) or "defaults",
                            "target": target,
                            "side": args.side,
                            "first_divergent_rung": f.first or "",
                            "worst_error_over_gate": f"{worst:.3g}",
                            "seconds": f"{time.perf_counter() - t:.2f}",
                        }
                    )
                    if f.first == "R7":
                        findings.append(rows[-1])
                        print("R7 FINDING", rows[-1], flush=True)
                    elif f.first:
                        alarms.append(rows[-1])
                        print("FALSE ALARM", rows[-1], flush=True)
    path = RESULTS / f"debug_false_alarms_{args.side}.csv"
    path.parent.mkdir(exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(
        f"{len(rows)} clean runs, {len(alarms)} false alarms, {len(findings)} R7 findings (the target's numerics), "
        f"{time.perf_counter() - start:.0f} s; wrote {path}"
    )
    return 1 if alarms else 0


if __name__ == "__main__":
    sys.exit(main())
