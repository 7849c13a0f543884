"""The host-CPU model against kernels timed on this machine: every catalogue kernel and block at its
defaults and at work-dominated sizes, three ways (PyTorch eager, torch.compile, jax.jit), as
`landscape validate host-cpu` prints them. Writes benchmarks/results/host_cpu_validate.csv and
prints the summary as JSON. Usage: python benchmarks/host_cpu_validate.py [--target-file F] [NAME ...]
"""

from __future__ import annotations

import json
import pathlib
import sys

from hardware_models.families.cpu.host import read_host
from hardware_models.target import get_target, load_target_file
from landscape.host_render import rows_csv
from landscape.host_validate import drift, summary, validate

RESULTS = pathlib.Path(__file__).with_name("results") / "host_cpu_validate.csv"


def main(argv: list[str]) -> int:
    target = get_target("host-cpu")
    if argv[:1] == ["--target-file"]:
        target, argv = load_target_file(pathlib.Path(argv[1])), argv[2:]
    before = drift(target)
    rows = validate(
        target,
        argv or None,
        progress=lambda r: print(
            f"{r.entry:15s} {r.size:5s} {r.runtime:8s} measured {r.measured_s * 1e6:10.1f} us "
            f"predicted {r.predicted_s * 1e6:10.1f} us  {r.error:+.0%}",
            file=sys.stderr,
        ),
    )
    after = drift(target)
    RESULTS.write_text(rows_csv(rows))
    print(
        json.dumps(
            {
                "machine": read_host().describe(),
                "target_file": target.path,
                "summary": summary(rows),
                "drift": {"before": before, "after": after},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
