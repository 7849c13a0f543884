"""`landscape calibrate host-cpu` and `landscape validate host-cpu` (registered by landscape/cli.py).

calibrate times the calibration rows on this machine (hardware_models/families/cpu/calibration.py) and
writes a target file and its rows; validate times the catalogue three ways against the model
(landscape/host_validate.py). Both check their input before torch or jax is imported.
"""

from __future__ import annotations

from pathlib import Path

import click

from landscape.options import print_json

HOST_TARGETS = ("host-cpu",)


def _check_host(name: str) -> None:
    from reference.errors import UnknownName

    if name not in HOST_TARGETS:
        raise UnknownName("target to time on this machine (only its own CPU can be measured)", name, HOST_TARGETS)


def _choices(text: str | None, valid, what: str, option: str) -> list[str] | None:
    """The comma-separated choices of `option`, each valid and each once (None: the default)."""
    from reference.errors import MalformedInput, UnknownName

    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UnknownName(what, text, valid)
    for item in items:
        if item not in valid:
            raise UnknownName(what, item, valid)
    twice = sorted({i for i in items if items.count(i) > 1})
    if twice:
        raise MalformedInput(f"{option} lists {', '.join(twice)} more than once; each {what} is timed once")
    return items


def _min_run(value: float) -> float:
    from reference.errors import InvalidShape

    if not 0.01 <= value <= 10:
        raise InvalidShape("--min-run-s", "min_run_s", value, "seconds per timed kernel, from 0.01 to 10")
    return value


def _host_target(target_file: str):
    """The host-cpu target in `target_file`; a file that is not one names its problem and the way
    to write one."""
    from hardware_models.target import load_target_file
    from reference.errors import BadTargetFile

    remedy = "write one with `landscape calibrate host-cpu`"
    path = Path(target_file)
    if not target_file.strip():
        raise BadTargetFile("--target-file", None, f"needs a path, got {target_file!r}; {remedy}")
    if path.is_dir():
        raise BadTargetFile(path, None, f"is a folder; give its host-cpu.toml, or {remedy}")
    if not path.exists():
        raise BadTargetFile(path, None, f"no such file; {remedy}")
    try:
        target = load_target_file(path)
    except BadTargetFile as err:  # an older calibration's file lacks the keys the model reads now
        raise BadTargetFile(err.path, err.key, f"{err.expected} ({remedy} to replace it)") from None
    if target.family_record.name != "cpu":
        raise BadTargetFile(path, "family", f'"cpu" (a host-cpu file), got {target.family_record.name!r}')
    return target


@click.command()
@click.argument("target_name", metavar="TARGET")
@click.option(
    "--out",
    "out_dir",
    default="out/calibration",
    show_default=True,
    help="Folder for host-cpu.toml (the target file) and host-cpu.csv (its measured rows).",
)
@click.option(
    "--min-run-s",
    "min_run_s",
    type=float,
    default=0.25,
    show_default=True,
    help="Seconds of timing per row, from 0.01 to 10.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def calibrate(target_name, out_dir, min_run_s, as_json) -> None:
    """Measure this machine and write a host-cpu target file whose fitted values cite their rows.

    \b
    Rows (about a minute and a half on 2 cores):
      calls      eager dispatch, an nn.Module call, a parameter, nested ATen ops, ATen's
                 GELU/SiLU/LayerNorm/softmax and index_add kernels; torch.compile's and
                 jax.jit's call and per-kernel costs; XLA's dot call
      memory     streaming bandwidth inside each cache level and beyond the last; XLA:CPU's
                 stream rate; a GEMM's weight stream beyond the private caches
      compute    GEMM FLOP/s in f32, bf16 and f16 (MKL's f32 at four sizes, XLA's at three);
                 ten transcendental functions through each runtime; a row reduction; a
                 convolution's fixed cost, rate and depth law; fused attention per query row
    Each row is the median of repeated calls after a warm-up, on all of PyTorch's threads,
    then the median over five sweeps of all the rows, with its interquartile range.
    Use the file with `landscape validate host-cpu --target-file DIR/host-cpu.toml`, or copy
    it over hardware_models/targets/host-cpu.toml to make it the default.
    """
    from landscape.outputs import check_output_dir

    _check_host(target_name)
    _min_run(min_run_s)
    folder = check_output_dir(out_dir, "--out")
    folder.mkdir(parents=True, exist_ok=True)
    from hardware_models.families.cpu.host import read_host
    from landscape.host_measure import calibrate as run

    host = read_host()
    if not as_json:
        click.echo(f"calibrating {host.describe()}")
    progress = (
        None
        if as_json
        else (
            lambda m: click.echo(
                f"  {m.spec.id} {m.spec.runtime:8s} {m.spec.workload}{' ' + m.spec.fn if m.spec.fn else ''}"
                f"{' in ' + m.spec.level if m.spec.level else ''} "
                f"{m.spec.dtype} size {m.spec.size}: {m.median_s * 1e6:,.2f} us (IQR {m.iqr_s * 1e6:,.2f})"
            )
        )
    )
    toml_path, csv_path, fits = run(Path(folder), min_run_s, progress)
    if as_json:
        print_json(
            {
                "target_file": str(toml_path),
                "rows_file": str(csv_path),
                "fitted": {k: {"value": v, "rows": r} for k, (v, r) in fits.items()},
            }
        )
        return
    for key, (value, rows) in sorted(fits.items()):
        click.echo(f"  {key} = {value:.4g}   (rows {rows})")
    click.echo(f"wrote {toml_path} and {csv_path}")


@click.command()
@click.argument("target_name", metavar="TARGET")
@click.option(
    "--target-file",
    "target_file",
    default=None,
    help="A target file from `landscape calibrate host-cpu` (default: hardware_models/targets/host-cpu.toml).",
)
@click.option(
    "--kernels",
    "kernels",
    default=None,
    metavar="NAME,...",
    help="Catalogue kernels to run (default: every kernel and block).",
)
@click.option(
    "--sizes",
    "sizes",
    default=None,
    metavar="small,large",
    help="Catalogue defaults (small), work-dominated sizes (large), or both (default).",
)
@click.option(
    "--runtimes",
    "runtimes",
    default=None,
    metavar="eager,inductor,xla",
    help="Which of the three ways to run (default: all).",
)
@click.option(
    "--min-run-s",
    "min_run_s",
    type=float,
    default=0.25,
    show_default=True,
    help="Seconds of timing per row, from 0.01 to 10.",
)
@click.option("--csv", "csv_path", default=None, help="Also write the rows to this CSV file.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def validate(target_name, target_file, kernels, sizes, runtimes, min_run_s, csv_path, as_json) -> None:
    """Time the catalogue's kernels and blocks here (PyTorch eager, torch.compile, jax.jit) and
    print each against the host-cpu model's prediction: error = predicted / measured - 1.

    The summary gives, per runtime and overall, the median |error|, the worst ratio
    max(p/m, m/p) and the rows within 2x. Measured: median of repeated calls (IQR beside it).
    The calibration's call and GEMM rows are re-timed before and after ("machine drift"): a
    shared machine's speed moves, and every prediction with it.
    """
    from hardware_models.target import get_target
    from landscape.host_measure import PASSES
    from landscape.host_validate import LARGE, RUNTIMES, SIZES
    from landscape.outputs import check_output_file

    _check_host(target_name)
    _min_run(min_run_s)
    names = _choices(kernels, sorted(LARGE), "kernel", "--kernels")
    size_list = tuple(_choices(sizes, SIZES, "size set", "--sizes") or SIZES)
    runtime_list = tuple(_choices(runtimes, RUNTIMES, "runtime", "--runtimes") or RUNTIMES)
    if csv_path is not None:
        check_output_file(csv_path, "--csv")
    target = _host_target(target_file) if target_file is not None else get_target("host-cpu")
    from hardware_models.families.cpu import machine_note
    from landscape.host_render import render_drift, render_rows, rows_csv
    from landscape.host_validate import drift, summary
    from landscape.host_validate import validate as run

    note = machine_note(target)
    if note and not as_json:
        click.echo(note, err=True)
    if not as_json:  # the rows come all at once, after PASSES sweeps over them (host_validate.validate)
        whole = " (2 to 3 minutes for the whole catalogue on 2 cores)" if names is None else ""
        click.echo(
            f"timing the catalogue on {Path(target.path).name}'s machine: every row built and compiled, "
            f"then timed in {PASSES} sweeps{whole}",
            err=True,
        )
    before = drift(target, min_run_s)
    rows = run(target, names, size_list, runtime_list, min_run_s)
    after = drift(target, min_run_s) if before else {}
    if csv_path is not None:
        from landscape.outputs import write_file

        write_file(csv_path, rows_csv(rows))
        if not as_json:
            click.echo(f"wrote {csv_path}", err=True)
    if as_json:
        print_json(
            {
                "target": target.name,
                "target_file": target.path,
                "machine_note": note,
                "rows": [r.to_dict() for r in rows],
                "summary": summary(rows),
                "drift": {"before": before, "after": after},
            }
        )
        return
    click.echo(render_rows(rows, summary(rows), target))
    click.echo(render_drift(before, after))
