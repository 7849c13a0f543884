"""Limits on what the importer accepts, so hostile or broken input is an error, never a crash.

Four limits, each checked before anything walks the input:

  MAX_INPUT_BYTES    a StableHLO file is read up to this size (64 MiB; the largest lowering in
                     benchmarks/, llama-3.1-405b's regional module, is well under 1 MiB).
  MAX_BRACKET_DEPTH  brackets ({ ( [ <) nested in the text; MLIR's parser recurses on the
                     C stack and crashes the process (a segmentation fault, not an exception)
                     somewhere past 2,000 nested regions, so the text is scanned first; the
                     nesting that aliases hide (`!t1 = tuple<!t0>`) counts too.
  MAX_EXPANDED_BYTES the text with every alias use replaced by its definition (256 MiB): thirty
                     lines of `#l1 = loc(callsite(#l0 at #l0))` print as gigabytes, and the
                     importer prints each op's location and opaque attributes.
  MAX_NESTING        calls and regions nested in the IR: a call adds one level, and so does an
                     op's region (a while body, a reduce body). The counters, the printer, the
                     verifier, the diff and the hardware models walk calls and regions
                     recursively; real lowerings nest under 10 deep. A recursive call chain
                     (a call graph with a cycle) is refused outright: StableHLO has no
                     recursion, and a walker would never end.
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter

import numpy as np

from reference.errors import MalformedInput, MalformedIR
from reference.ir.graph import Block, Function, Module

MAX_INPUT_BYTES = 64 * 2**20
MAX_BRACKET_DEPTH = 512
MAX_NESTING = 64
MAX_EXPANDED_BYTES = 4 * MAX_INPUT_BYTES

_MiB = 2**20


def _size(n: int) -> str:
    return f"{n:,} bytes ({n / _MiB:.1f} MiB)" if n >= _MiB else f"{n:,} bytes"


def _line_column(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start + 1


def read_stablehlo_file(path: str | os.PathLike, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The text of a StableHLO file, read defensively: a regular file or a pipe, at most
    max_bytes, UTF-8 (a leading byte-order mark is dropped).

    Raises:
        MalformedInput: the path cannot be read, is a directory or a device, or holds more than
            max_bytes (no more than max_bytes + 1 bytes are ever read).
        MalformedIR: the bytes are not UTF-8; the message names the offset of the first bad byte.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise MalformedInput(f"cannot read {path}: {err.strerror}") from None
    if stat.S_ISDIR(mode):
        raise MalformedInput(f"cannot read {path}: it is a directory, not a StableHLO text file")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # /dev/zero, /dev/tty, a socket
        raise MalformedInput(f"cannot read {path}: it is a device or socket, not a regular file")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as err:
        raise MalformedInput(f"cannot read {path}: {err.strerror}") from None
    if len(data) > max_bytes:
        total = os.stat(path).st_size if stat.S_ISREG(mode) else None
        size = _size(total) if total and total > max_bytes else f"more than {_size(max_bytes)}"
        raise MalformedInput(f"{path} is too large: {size}; the limit for StableHLO text is {_size(max_bytes)}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line, column = _line_column(data, err.start)
        raise MalformedIR(
            f"{path} is not UTF-8 text: byte 0x{data[err.start]:02x} at offset {err.start} ({err.reason})", line, column
        ) from None
    return text.removeprefix("\ufeff")


# String literals and comments, whose brackets do not nest; blanked (same length) before the scan.
_STRINGS_AND_COMMENTS = re.compile(rb'"(?:[^"\\\n]|\\.)*"|//[^\n]*')
_STEP = np.zeros(256, np.int8)  # byte -> +1 opens a bracket, -1 closes one
_STEP[list(b"{([<")], _STEP[list(b"})]>")] = 1, -1
# An alias definition (`#loc3 = loc(...)`, `!t = tensor<...>`), a use of one, and where a
# definition's body ends: the next line that starts a definition, an op, a block or a brace.
_ALIAS_NAME = rb"[#!][A-Za-z_.$][\w.$-]*"
_DEFINITION = re.compile(rb"(?m)^[ \t]*(" + _ALIAS_NAME + rb")[ \t]*=")
_BODY_END = re.compile(rb"(?m)^[ \t]*(?:" + _ALIAS_NAME + rb"[ \t]*=|module\b|func\.func\b|builtin\.|[\"%^{}])")
_USE = re.compile(_ALIAS_NAME)


def check_text(text: str, max_depth: int = MAX_BRACKET_DEPTH, max_expanded: int = MAX_EXPANDED_BYTES) -> None:
    """Refuse text that MLIR's parser or printer cannot take safely, before MLIR sees it.

    Two hazards, both measured on the text: brackets nested deeper than max_depth (the parser
    recurses on the C stack and crashes the process), counting the nesting that aliases hide
    (`!t1 = tuple<!t0>`, `!t2 = tuple<!t1>`, ...); and aliases that expand exponentially
    (`#l1 = loc(callsite(#l0 at #l0))`, `#l2 = loc(callsite(#l1 at #l1))`, ...: thirty lines
    print as gigabytes, and the importer prints every op's location).

    Raises:
        MalformedIR: at the line and column where the nesting passes the limit, or naming the
            alias that nests too deep or expands past max_expanded bytes.
    """
    data = text.encode("utf-8", "surrogatepass")
    brackets = data.count(b"{") + data.count(b"(") + data.count(b"[") + data.count(b"<")
    if brackets <= max_depth and not _DEFINITION.search(data):
        return  # cannot nest deeper than it has brackets, and nothing expands
    blanked = _STRINGS_AND_COMMENTS.sub(lambda m: b" " * len(m.group()), data)
    codes = np.frombuffer(blanked, np.uint8)
    step = _STEP[codes]
    arrows = np.flatnonzero((codes[1:] == ord(">")) & ((codes[:-1] == ord("-")) | (codes[:-1] == ord("=")))) + 1
    step[arrows] = 0  # "->" (function types) and "=>" are not closing brackets
    depth = np.cumsum(step, dtype=np.int32)
    over = np.flatnonzero(depth > max_depth)
    if over.size:
        line, column = _line_column(data, int(over[0]))
        raise MalformedIR(f"brackets nest more than {max_depth} deep", line, column)
    definitions = list(_DEFINITION.finditer(blanked))
    if definitions:
        _check_aliases(data, blanked, definitions, depth, max_depth, max_expanded)


def _check_aliases(data: bytes, blanked: bytes, definitions, depth, max_depth: int, max_expanded: int) -> None:
    """The alias checks of check_text: each alias's nesting and printed size, through its uses."""
    spans = {}  # alias name -> (start of its body, end of its body, where it is defined)
    for match in definitions:
        end = _BODY_END.search(blanked, match.end())
        spans[match.group(1)] = (match.end(), end.start() if end else len(blanked), match.start(1))
    bodies = sorted((start, end, name) for name, (start, end, _) in spans.items())
    # Uses inside each body, and in the rest of the text (less each definition's own name).
    uses = {name: [u for u in _USE.findall(blanked, start, end) if u in spans] for start, end, name in bodies}
    gaps = zip([0] + [end for _, end, _ in bodies], [start for start, _, _ in bodies] + [len(blanked)])
    elsewhere = Counter(u for a, b in gaps for u in _USE.findall(blanked, a, b) if u in spans)
    elsewhere.subtract(list(spans))
    # Each body's own bracket depth (relative to where it starts) and length.
    edges = np.array([i for start, end, _ in bodies for i in (start, end)])
    # reduceat takes the maximum over [edges[k], edges[k + 1]); a body that ends the text is
    # cut before its last byte, whose depth is the body's last closing bracket's anyway.
    peaks = np.maximum.reduceat(depth, np.minimum(edges, len(depth) - 1))[0::2]
    nesting, size = {}, {}
    for (start, end, name), peak in zip(bodies, peaks):
        base = int(depth[start - 1]) if start else 0
        nesting[name], size[name] = (max(int(peak) - base, 0) if end > start else 0), end - start
    # Through the uses, depth first with an explicit stack: total nesting and printed size.
    done: dict[bytes, tuple[int, int]] = {}
    for root in spans:
        if root in done:
            continue
        stack, active = [(root, 0)], {root}
        while stack:
            name, i = stack[-1]
            own = uses[name]
            if i < len(own):
                stack[-1] = (name, i + 1)
                if own[i] not in done and own[i] not in active:
                    active.add(own[i])
                    stack.append((own[i], 0))
                continue
            stack.pop()
            active.discard(name)
            refs = [done.get(u, (0, len(u))) for u in own]  # a use inside a cycle counts as itself
            deepest = nesting[name] + max((d for d, _ in refs), default=0)
            printed = min(size[name] + sum(n - len(u) for (_, n), u in zip(refs, own)), max_expanded + 1)
            done[name] = (deepest, printed)
            if deepest > max_depth:
                line, column = _line_column(data, spans[name][2])
                raise MalformedIR(
                    f"alias {name.decode()} nests more than {max_depth} deep through the aliases it uses", line, column
                )
    total = len(data) + sum(count * (done[u][1] - len(u)) for u, count in elsewhere.items() if count > 0)
    if total > max_expanded:
        worst = max(spans, key=lambda n: done[n][1])
        line, column = _line_column(data, spans[worst][2])
        raise MalformedIR(
            f"aliases expand the text to more than {_size(max_expanded)} "
            f"(alias {worst.decode()} alone prints as {_size(done[worst][1])} or more)",
            line,
            column,
        )


def nested_ops(block: Block | Function):
    """(op, regions around it) for every op in block, nested regions included; iterative."""
    stack = [(block, 0)]
    while stack:
        current, depth = stack.pop()
        for op in current.ops:
            yield op, depth
            stack.extend((region, depth + 1) for region in op.regions)


def _region_depth(block: Block | Function) -> int:
    """How deep regions nest inside a function."""
    return max((depth + 1 for op, depth in nested_ops(block) if op.regions), default=0)


def _calls(block: Block | Function):
    """(callee, regions around the call) for every call in block."""
    return [(op.callee, depth) for op, depth in nested_ops(block) if op.callee]


def _chain(path: list[str]) -> str:
    names = [f"@{n}" for n in path]
    if len(names) > 8:
        names = names[:3] + [f"... ({len(names) - 6} more)"] + names[-3:]
    return " -> ".join(names)


def check_calls(module: Module, limit: int = MAX_NESTING) -> None:
    """Refuse a recursive call graph, and calls and regions nested deeper than limit.

    Iterative (an explicit stack), so a chain of any length is measured, never recursed on.
    Calls to functions the module lacks are left to `verify`, which names them.

    Raises:
        MalformedIR: naming the functions of the cycle, or the deepest function of the chain.
    """
    functions = {f.name: f for f in module.functions}
    if not functions:
        return
    regions = {name: _region_depth(fn) for name, fn in functions.items()}
    for name, nested in regions.items():
        if nested > limit:
            raise MalformedIR(f"func @{name}: regions nest {nested} deep, over the limit of {limit}")
    calls = {name: [(c, d) for c, d in _calls(fn) if c in functions] for name, fn in functions.items()}
    depth: dict[str, int] = {}  # function -> deepest nesting below it (its regions, its callees')
    deepest: dict[str, str | None] = {}  # function -> the callee on its deepest chain
    for root in functions:
        if root in depth:
            continue
        stack, on_path = [(root, 0)], {root: 0}
        while stack:
            name, i = stack[-1]
            edges = calls[name]
            if i < len(edges):
                stack[-1] = (name, i + 1)
                callee = edges[i][0]
                if callee in on_path:
                    cycle = [n for n, _ in stack[on_path[callee] :]] + [callee]
                    raise MalformedIR(f"recursive call: {_chain(cycle)}; calls must not form a cycle")
                if callee not in depth:
                    on_path[callee] = len(stack)
                    stack.append((callee, 0))
                continue
            stack.pop()
            del on_path[name]
            best, via = regions[name], None
            for callee, at in edges:
                if at + 1 + depth[callee] > best:
                    best, via = at + 1 + depth[callee], callee
            depth[name], deepest[name] = best, via
    root = max(functions, key=lambda n: (depth[n], n == module.entry))
    if depth[root] > limit:
        path = [root]
        while deepest[path[-1]] is not None:
            path.append(deepest[path[-1]])
        level, culprit = 0, path[-1]
        for caller, callee in zip(path, path[1:]):  # the first function past the limit
            level += 1 + max(at for c, at in calls[caller] if c == callee)
            if level > limit:
                culprit = callee
                break
        raise MalformedIR(
            f"calls and regions nest {depth[root]} deep below @{root}, over the limit of {limit}, "
            f"at @{culprit}: {_chain(path)}"
        )
