"""The mutation score of the last `make mutation` run, per file, and every surviving mutant with the
line it changes: benchmarks/results/mutation_score.json and benchmarks/results/mutation_survivors.txt.

Reads what mutmut left under mutants/: each source file's `.meta` (the exit code of the tests per
mutant: 0 survived, 1 or 3 killed, a timeout counts as killed, as in mutmut's own score) and the
mutated source, where each mutant is a function `x_NAME__mutmut_N` beside `x_NAME__mutmut_orig`.

    python benchmarks/mutation_report.py [--check PERCENT]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
RESULTS = ROOT / "benchmarks" / "results"
KILLED = {1, 3, 24, -24, 36, 152, 255}  # killed, pytest's internal error, timeouts (stats.py in mutmut)


def _functions(path: Path) -> dict[str, str]:
    text = path.read_text()
    lines = text.splitlines()
    return {
        node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef)
    }


def _change(functions: dict[str, str], name: str) -> str:
    """The lines a mutant changes, original then mutated, whitespace squeezed."""
    fn = name.rsplit(".", 1)[-1]
    base = fn.rsplit("__mutmut_", 1)[0]
    orig, mutant = functions.get(base + "__mutmut_orig"), functions.get(fn)
    if not orig or not mutant:
        return "?"
    diff = difflib.unified_diff(orig.splitlines()[1:], mutant.splitlines()[1:], lineterm="", n=0)
    return " | ".join(
        " ".join(line.split()) for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


KINDS = (  # how a surviving mutant changes the code, for the summary (the survivors file has each one)
    (
        "text",
        "a string's words changed (XX-wrapped or upper-cased): note and label text, or a key the target file never has",
        lambda change: "XX" in change or _upper(change),
    ),
    (
        "module",
        "the module argument set to None: group_work reads it only for a call, and no kernel holds one",
        lambda change: "(plan, None, group)" in change or "(None, plan" in change,
    ),
    (
        "default",
        "a default argument or value dropped or changed: a lookup that always finds its key, or a "
        "default no caller relies on",
        lambda change: _in_default(change),
    ),
    (
        "break",
        "continue made break where the items skipped come last (transfers follow the kernels)",
        lambda change: "+ break" in change,
    ),
)


def _in_default(change: str) -> bool:
    """The first character the mutant changes sits inside a .get(...) call or after `default=`."""
    minus, _, plus = change.partition(" | + ")
    minus = minus[2:]
    i = next((j for j, (a, b) in enumerate(zip(minus, plus)) if a != b), min(len(minus), len(plus)))
    prefix = minus[:i]
    call = prefix.rfind(".get(")
    return "default=" in prefix[-12:] or (call >= 0 and prefix.count("(", call) > prefix.count(")", call))


def _upper(change: str) -> bool:
    minus, _, plus = change.partition(" | + ")
    return minus[2:].lower() == plus.lower() and minus[2:] != plus


def kind_of(change: str) -> str:
    return next((name for name, _, test in KINDS if test(change)), "other")


def collect() -> tuple[dict, list[str]]:
    per_file: dict[str, Counter] = {}
    survivors = []
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        source = meta.with_suffix("")
        relative = str(source.relative_to(MUTANTS))
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        if not codes:
            continue
        counts = per_file.setdefault(relative, Counter())
        functions = None
        for name, code in sorted(codes.items(), key=lambda kv: (kv[0].rsplit("_", 1)[0], int(kv[0].rsplit("_", 1)[1]))):
            if code is None:
                counts["not checked"] += 1
            elif code in KILLED:
                counts["killed"] += 1
            elif code == 0:
                counts["survived"] += 1
                functions = functions or _functions(source)
                survivors.append(f"{relative}  {name.rsplit('.', 1)[-1]}: {_change(functions, name)}")
            else:
                counts[f"exit {code}"] += 1
    total = Counter()
    for counts in per_file.values():
        total.update(counts)
    checked = total["killed"] + total["survived"]
    kinds = Counter(kind_of(line.split(": ", 1)[1]) for line in survivors)
    summary = {
        "killed": total["killed"],
        "survived": total["survived"],
        "not_checked": total["not checked"],
        "survivors_by_kind": {name: kinds.get(name, 0) for name, *_ in KINDS} | {"other": kinds.get("other", 0)},
        "score_percent": round(100 * total["killed"] / checked, 1) if checked else 0.0,
        "files": {
            f: {
                "killed": c["killed"],
                "survived": c["survived"],
                "score_percent": round(100 * c["killed"] / max(1, c["killed"] + c["survived"]), 1),
            }
            for f, c in per_file.items()
        },
    }
    return summary, survivors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=float, default=None, help="exit 1 if the score is below this percentage")
    args = parser.parse_args(argv)
    if not MUTANTS.is_dir():
        print("mutation_report: no mutants/ folder: run `make mutation` first", file=sys.stderr)
        return 2
    summary, survivors = collect()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mutation_score.json").write_text(json.dumps(summary, indent=1) + "\n")
    (RESULTS / "mutation_survivors.txt").write_text(
        f"# {len(survivors)} surviving mutants (benchmarks/mutation_report.py); each line: file, mutant, "
        "the original line(s) (-) and the mutated (+)\n" + "\n".join(survivors) + "\n"
    )
    for name, c in sorted(summary["files"].items(), key=lambda kv: kv[1]["score_percent"]):
        print(f"{c['score_percent']:5.1f}%  {c['killed']:4d} killed  {c['survived']:4d} survived  {name}")
    for name, words, _ in KINDS:
        print(f"{summary['survivors_by_kind'][name]:5d} survivors: {words}")
    print(f"{summary['survivors_by_kind']['other']:5d} survivors: other changes (listed in mutation_survivors.txt)")
    print(
        f"mutation score {summary['score_percent']}%: {summary['killed']} killed, {summary['survived']} survived"
        + (f", {summary['not_checked']} not checked" if summary["not_checked"] else "")
    )
    if args.check is not None and summary["score_percent"] < args.check:
        print(f"mutation_report: score {summary['score_percent']}% is below {args.check}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
