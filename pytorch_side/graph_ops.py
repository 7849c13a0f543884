"""The ops of a torch.export graph, in order, each with the user's line it came from: what the
debugger's R2 compares between two captures (landscape.debug._recapture). Pure Python over the
FX graph (no torch import), so torch-xla's driver, under its own torch, reads graphs the same way."""

from __future__ import annotations

import re

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in \S+\n[ \t]*(.*)')


def graph_ops(exported) -> list[tuple[str, str, str]]:
    """(op, the user's file:line, its code) for each call in the exported program's graph, from the
    node's stack trace (its last frame: the line that called the op)."""
    ops = []
    for node in exported.graph.nodes:
        if node.op == "call_function":
            frames = _FRAME.findall(node.meta.get("stack_trace") or "")
            file, line, code = frames[-1] if frames else ("", "", "")
            ops.append((str(node.target), f"{file.rsplit('/', 1)[-1]}:{line}" if file else "", code.strip()))
    return ops
