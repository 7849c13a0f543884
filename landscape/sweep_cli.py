"""`landscape sweep SPEC.toml`: a what-if grid over predict (landscape/sweep.py), its table and its
Pareto front. The spec is checked, every name and knob, before anything is lowered."""

from __future__ import annotations

import click

from landscape.options import print_json


@click.command()
@click.argument("spec_path", metavar="SPEC.toml")
@click.option("--out", "out_dir", default=None, help="A folder for points.csv (every point) and front.csv.")
@click.option("--resume", is_flag=True, help="Keep the points already in --out's points.csv; cost only the rest.")
@click.option("--force", is_flag=True, help="Overwrite --out's points.csv and front.csv from an earlier sweep.")
@click.option("--yes", is_flag=True, help="Run a sweep of more than 100,000 points.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every point and the front.")
def sweep(spec_path, out_dir, resume, force, yes, as_json) -> None:
    """Sweep a grid of design points (targets, chips, precision, batch, lengths, target knobs) through
    `predict` and print the Pareto front of the spec's objectives.

    \b
    model = "llama-3.1-8b"
    [axes]
    target = ["h100", "h200", "b200"]
    precision = ["bf16", "fp8"]
    batch = [1, 16, 64]
    "set.levels.hbm.bytes_per_s" = [3.35e12, 6.7e12]
    [objectives]
    tokens_per_s_per_user = "max"
    throughput_tokens_per_s_per_chip = "max"
    [constraints]
    decode_step_s = { max = 0.05 }

    Every point is costed as `landscape predict` would cost it alone; a point a target cannot run
    stays in the table with its reason. examples/sweep.toml is a spec to start from.
    """
    from pathlib import Path

    from landscape.outputs import check_output_dir
    from landscape.sweep import load_spec, read_done, run_sweep, write_table
    from reference.errors import MalformedInput

    spec = load_spec(spec_path)
    if resume and out_dir is None:
        raise MalformedInput("--resume needs --out: the folder whose points.csv it continues")
    out = check_output_dir(out_dir, "--out") if out_dir is not None else None
    if out is not None and not (resume or force) and (Path(out) / "points.csv").exists():
        raise MalformedInput(
            f"--out {out_dir} holds an earlier sweep's points.csv: --resume to continue it, --force to overwrite it"
        )
    done = read_done(Path(out) / "points.csv", spec) if resume else {}
    result = run_sweep(spec, done=done, yes=yes)
    if out is not None:
        write_table(result, Path(out))
    if as_json:
        print_json(result.to_dict())
        return
    d = result.to_dict()
    objectives = list(spec.objectives)
    click.echo(
        f"{spec.model}: {d['points']} points, {d['failed']} the targets cannot run, {d['feasible']} feasible; "
        f"Pareto front of {', '.join(f'{s} {m}' for m, s in spec.objectives.items())}: {len(result.front)} points"
    )
    axes = [a for a in spec.axes if len({repr(r[a]) for r in result.rows}) > 1] or list(spec.axes)[:1]
    header = [*axes, *objectives]
    lines = [[str(r[a]) for a in axes] + [f"{r[m]:.4g}" for m in objectives] for r in result.front]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)] if lines else []
    click.echo("  " + "  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for line in lines:
        click.echo("  " + "  ".join(c.ljust(w) for c, w in zip(line, widths)))
    if out is not None:
        click.echo(f"wrote {Path(out) / 'points.csv'} and {Path(out) / 'front.csv'}")
