"""How a `landscape` run ends: one line and an exit code, never a traceback for anything a user can do.

    0    done (for `run`: every comparison passed)
    1    ran, but a check failed (`run` with `ok: false`)
    2    bad input: `landscape: error: ...` on one line, naming the problem and the valid choices
    130  SIGINT (Ctrl-C): `landscape: interrupted`
    141  stdout closed or full (`| head -1`, `> /dev/full`, `>&-`): output was lost, nothing
         else is wrong (128 + SIGPIPE, as a shell reports a writer whose reader went away); a
         closed pipe says nothing, a full or failing stdout one line on stderr
    143  SIGTERM: `landscape: terminated`

Anything else is a bug and keeps its traceback (design/style.md §4). Files a run was writing are
cleaned up on 130 and 143 (`landscape.outputs`); files it had finished are kept.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import signal
import sys
from collections.abc import Iterator

import click

STDOUT_LOST = 141


class Interrupted(BaseException):
    """Raised by the SIGINT handler (a BaseException, like KeyboardInterrupt, so nothing catches it
    by accident; not a KeyboardInterrupt, which click would turn into an Abort and a blank line)."""

    code, line = 130, "landscape: interrupted"


class Terminated(Interrupted):
    """Raised by the SIGTERM handler."""

    code, line = 143, "landscape: terminated"


@contextlib.contextmanager
def signal_handlers() -> Iterator[None]:
    """SIGINT raises Interrupted and SIGTERM Terminated while the block runs (main thread only);
    the previous handlers come back afterwards, so an in-process caller keeps its own."""

    def raiser(kind):
        def handler(signum, frame):
            raise kind()

        return handler

    previous = {}
    try:
        for sig, kind in ((signal.SIGINT, Interrupted), (signal.SIGTERM, Terminated)):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # a signal the caller ignores stays ignored (nohup)
                previous[sig] = signal.signal(sig, raiser(kind))
    except ValueError:  # not the main thread: leave the defaults
        pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class StdoutLost(Exception):
    """stdout refused a write (closed pipe, full disk): raised by the guarded stdout, so that an
    OSError from anything else is never mistaken for it."""

    def __init__(self, err: OSError):
        super().__init__(str(err))
        self.err = err


class _GuardedRaw(io.RawIOBase):
    """fd 1, written with os.write; a failure raises StdoutLost once, later writes are dropped."""

    def __init__(self, fd: int):
        super().__init__()
        self.fd, self.lost = fd, False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data) -> int:
        if self.lost:
            return len(data)
        try:
            return os.write(self.fd, data)
        except OSError as err:
            self.lost = True
            raise StdoutLost(err) from None


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """sys.stdout replaced, while the block runs, by the same stream over a `_GuardedRaw`; an
    in-memory stdout (a test's capture) is left as it is."""
    original = sys.stdout
    try:
        fd = original.fileno()
        original.flush()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        yield
        return
    raw = _GuardedRaw(fd)
    guarded = io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=original.encoding,
        errors=original.errors,
        line_buffering=original.line_buffering,
    )
    sys.stdout = guarded
    try:
        yield
        guarded.flush()
    finally:
        sys.stdout = original
        with contextlib.suppress(Exception):  # what an error left unwritten goes out now (or is dropped if lost)
            guarded.detach()


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's last flush of the lost output cannot fail."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except Exception:  # no fd behind stdout (a test's capture)
        pass


def _say(line: str) -> None:
    """One line on stderr: a character that is not printable (a carriage return or an escape in a
    user's value, echoed back by a message) is written escaped, as repr writes it, so the line stays one."""
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        click.echo(line, err=True)


def _usage_line(err: click.UsageError) -> str:
    if isinstance(err, click.NoSuchOption) and re.fullmatch(r"-\d[\d_.]*", err.option_name or ""):
        command = err.ctx.info_name if err.ctx else "landscape"
        return (
            f"{command}: {err.option_name} is not a valid size; sizes are integers >= 1 "
            f"(a negative number is read as an option)"
        )
    return " ".join(err.format_message().split())


def run(group: click.Group, argv: list[str] | None = None) -> int:
    """Run the click group and turn every way it can end into an exit code (the module doc)."""
    from reference.errors import LandscapeError

    closed_at_start = sys.stdout is None
    try:
        with signal_handlers(), guarded_stdout():
            try:
                code = group.main(args=argv, prog_name="landscape", standalone_mode=False)
                code = code if isinstance(code, int) else 0
            except click.exceptions.Exit as exit_:
                code = exit_.exit_code
    except LandscapeError as err:
        _say(f"landscape: error: {err}")
        return 2
    except click.UsageError as err:
        _say(f"landscape: error: {_usage_line(err)}")
        return 2
    except click.exceptions.Abort:
        _say("landscape: aborted")
        return 130
    except Interrupted as sig:
        _say(sig.line)
        return sig.code
    except StdoutLost as lost:
        if lost.err.errno != errno.EPIPE:
            _say(f"landscape: stdout: {lost.err.strerror or lost.err} (output lost)")
        _silence_stdout()
        return STDOUT_LOST
    if closed_at_start and code == 0:
        return STDOUT_LOST
    return code
