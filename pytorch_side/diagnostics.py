"""torch-mlir's diagnostics, kept: MLIR prints the cause of a failed lowering on file descriptor 2
(`loc(callsite("model.py":6:0 at ...)): error: failed to legalize operation 'torch.operator' ...
<{name = "torch.aten.histc"}>`) while the exception it raises says only "Lowering TorchFX IR ->
Torch Backend IR failed". `captured_stderr` collects what the C++ side prints there, and
`root_cause` reduces it to one line: the error, the ATen op it names, and the user's source line
(the first frame of the callsite outside this package and torch).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

_ERROR = re.compile(r"loc\((?P<loc>.*?)\): error: (?P<msg>.*)")
_FRAME = re.compile(r'"(?P<file>[^"]+)":(?P<line>\d+):\d+')
_ATEN = re.compile(r'name = "(?P<op>torch\.aten\.[\w.]+)"')
_OURS = (os.sep + "pytorch_side" + os.sep, os.sep + "torch" + os.sep, os.sep + "torch_mlir" + os.sep)


@contextlib.contextmanager
def captured_stderr():
    """Yield a list that, after the block, holds the text written to file descriptor 2 inside it
    (by Python or by C++); nothing of it reaches the terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    out: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            out.append(sink.read().decode("utf-8", "replace"))


def root_cause(diagnostics: str) -> str | None:
    """The first MLIR error in `diagnostics` as one line, or None when it holds none:
    "failed to legalize operation 'torch.operator' (torch.aten.histc) at model.py:6"."""
    for line in diagnostics.splitlines():
        m = _ERROR.search(line)
        if not m:
            continue
        msg = m["msg"].split(": %")[0].split(" %")[0].strip()  # the message, not the op's IR after it
        op = _ATEN.search(m["msg"])
        frames = [f for f in _FRAME.finditer(m["loc"]) if not any(part in f["file"] for part in _OURS)]
        where = f" at {frames[0]['file']}:{frames[0]['line']}" if frames else ""
        return f"{msg}{f' ({op[1]})' if op else ''}{where}"
    return None
