"""`landscape`: the command line, and the only module that reaches into every package.

Commands are thin: parse, call one documented function, render. torch and jax are imported
inside the commands that need them, so `landscape --help` stays fast. Bad input prints one
line, `landscape: error: ...`, and exits 2; a check that ran and failed exits 1.
"""

from __future__ import annotations

import json
import sys

import click

DTYPES = ("float32", "bfloat16", "float16")


def default_runners() -> dict:
    """The two implementations, each a function from a Case to its outputs."""
    import jax_side
    import pytorch_side

    return {"torch": pytorch_side.run_case, "jax": jax_side.run_case}


def _print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Landscape: one model, two frameworks, five AI execution models.

    Every kernel exists as a float64 numpy reference, a PyTorch module and a JAX/Flax NNX
    module. NAME is a catalogue kernel (matmul, attention, block, ...) or a published model
    config (llama-3.1-8b, ...); see `landscape kernels`.
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def kernels(as_json: bool) -> None:
    """List every kernel and model: parameters with defaults, dtypes and sides."""
    from reference.catalogue_info import describe_catalogue

    rows = describe_catalogue()
    if as_json:
        _print_json(rows)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Landscape catalogue")
    for col in ("name", "kind", "description", "parameters (defaults)", "dtypes"):
        table.add_column(col, overflow="fold")
    for r in rows:
        params = " ".join(f"{k}={v['default']}" for k, v in r["params"].items())
        table.add_row(*(escape(c) for c in (r["name"], r["kind"], r["description"], params, ", ".join(r["dtypes"]))))
    Console(width=160).print(table)


@cli.command()
@click.argument("name")
@click.option("--shape", "shapes", multiple=True, metavar="PARAM=VALUE", help="Override a shape parameter; repeatable.")
@click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Input generator seed.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def run(name: str, shapes: tuple[str, ...], dtype: str, seed: int, as_json: bool) -> None:
    """Run NAME on the reference, PyTorch and JAX with identical inputs and weights.

    Prints, for each side against the float64 reference and for the two sides against each
    other, the max absolute and max relative (normwise) error, the bound from the dtype's
    tolerance, and pass or fail. Exits 1 if any comparison fails.
    """
    from reference.agreement import check_agreement
    from reference.spec import parse_assignments

    overrides = parse_assignments(shapes)
    result = check_agreement(name, overrides, dtype, seed, runners=default_runners())
    if as_json:
        _print_json(result.to_dict())
    else:
        _render_agreement(result)
    if not result.ok:
        raise click.exceptions.Exit(1)


def _render_agreement(result) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    tol = result.tolerance
    shapes = " ".join(f"{k}={v}" for k, v in result.shapes.items())
    table = Table(title=escape(f"{result.kernel} [{result.dtype}] {shapes}"))
    for col in ("comparison", "max abs", "max rel", "bound", "result"):
        table.add_column(col)
    for key, err in result.errors.items():
        verdict = "[green]pass[/green]" if err.ok else "[red]FAIL[/red]"
        table.add_row(key, f"{err.max_abs:.3e}", f"{err.max_rel:.3e}", f"{err.bound:.3e}", verdict)
    console = Console(width=120)
    console.print(table)
    console.print(
        f"tolerance {tol.dtype}: |side - ref| <= {tol.atol:.3g} + {tol.rtol:.3g} * max|ref|; "
        f"side vs side at twice that. {tol.accumulation}."
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `landscape` console script."""
    from reference.errors import LandscapeError

    try:
        code = cli.main(args=argv, prog_name="landscape", standalone_mode=False)
    except LandscapeError as err:
        click.echo(f"landscape: error: {err}", err=True)
        return 2
    except click.UsageError as err:
        click.echo(f"landscape: error: {err.format_message()}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("landscape: aborted", err=True)
        return 130
    except click.exceptions.Exit as exit_:
        return exit_.exit_code
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
