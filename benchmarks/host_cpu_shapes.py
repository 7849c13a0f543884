"""The host-CPU model on shapes the validation does not run and no calibration row times: GEMMs
of one to a few rows (a decode step's), of odd sizes and of weights beyond the L2 and a quarter of
the L3; convolutions of an RGB input and of few channels; attention at other lengths. Each shape
timed three ways, as `landscape validate host-cpu` times its rows. Writes
benchmarks/results/host_cpu_shapes.csv and prints one line per row and the summary as JSON.
Usage: python benchmarks/host_cpu_shapes.py
"""

from __future__ import annotations

import json
import pathlib
import sys

from hardware_models.target import get_target
from landscape.host_render import rows_csv
from landscape.host_validate import summary, validate

RESULTS = pathlib.Path(__file__).with_name("results") / "host_cpu_shapes.csv"
# Chosen by kind, not by how a row came out: decode-shaped GEMMs (1-16 rows, 4-16 MiB weights),
# a skinny and an odd one, a tall one; convolutions from 3 input channels and at 16; attention
# longer than the validation's and at an odd length and head width.
SHAPES = {
    "linear": (
        {"m": 1, "k": 1024, "n": 1024},
        {"m": 4, "k": 2048, "n": 2048},
        {"m": 16, "k": 1024, "n": 4096},
        {"m": 64, "k": 512, "n": 2048},
        {"m": 333, "k": 255, "n": 129},
        {"m": 2048, "k": 64, "n": 64},
    ),
    "matmul": ({"m": 65, "n": 63, "k": 129}, {"m": 1, "n": 4096, "k": 1024}, {"m": 512, "n": 512, "k": 512}),
    "conv2d": (
        {"batch": 1, "c_in": 3, "c_out": 8, "height": 64, "width": 64},
        {"batch": 4, "c_in": 16, "c_out": 16, "height": 8, "width": 8},
        {"batch": 2, "c_in": 3, "c_out": 64, "height": 32, "width": 32},
    ),
    "attention": (
        {"batch": 1, "seq": 512, "n_heads": 4, "n_kv_heads": 4, "head_dim": 64},
        {"batch": 1, "seq": 100, "n_heads": 4, "n_kv_heads": 2, "head_dim": 48},
    ),
}


def main() -> int:
    target = get_target("host-cpu")
    rows = []
    for name, cases in SHAPES.items():
        for shapes in cases:
            for row in validate(target, [name], sizes=("large",), large={name: shapes}):
                rows.append(row)
                print(
                    f"{row.entry:10s} {row.shapes:50s} {row.runtime:8s} measured {row.measured_s * 1e6:9.1f} us "
                    f"predicted {row.predicted_s * 1e6:9.1f} us  {row.error:+.0%}",
                    file=sys.stderr,
                )
    RESULTS.write_text(rows_csv(rows))
    print(json.dumps({"target_file": target.path, "summary": summary(rows)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
