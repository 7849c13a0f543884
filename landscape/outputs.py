"""What the CLI writes, written safely: JSON without NaN, output paths checked before the work
starts, single files replaced atomically, and report folders staged, locked and installed whole.

The guarantees (docs/cli.md, "The command line"):

- **JSON is finite.** `dump_json` is the one JSON writer (stdout, report.json, traces); a NaN or an
  infinity is refused (`NonFiniteResult`, naming the field), never printed.
- **Paths are checked first.** `check_output_file` and `check_output_dir` refuse an empty path, a
  path under a file, an existing folder given as a file, and a place where nothing can be created
  (a probe file is created and removed in the nearest existing folder: `os.access` says yes to
  root even on /proc), before any lowering.
- **Single files are atomic.** `write_file` writes `NAME.tmp-PID` beside the file and renames it.
- **Report folders are staged, locked and never clobber.** `OutputDir` refuses a folder that already
  holds a report unless `force`; locks `DIR.lock` beside the folder (`fcntl.flock`, non-blocking: a
  second run into the same folder fails at once); writes everything into `DIR.tmp-PID` beside it;
  and installs it when complete: a rename when the folder is new or empty, otherwise a merge, with
  SIGINT and SIGTERM held back, that first removes the files the previous run listed in its
  manifest (`.landscape-manifest.json`) and the old report, then moves the new files in, the report
  and the manifest last. Files that no run of ours wrote are never removed. The staging folder is
  removed on any error, SIGINT or SIGTERM.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from reference.errors import BadOutput, NonFiniteResult

MANIFEST = ".landscape-manifest.json"
# The top-level names a report folder holds (landscape/report.py writes them; a test checks): a
# folder holding any of them holds (part of) a report, which only --force replaces.
REPORT_NAMES = ("report.json", "report.html", MANIFEST, "hlo", "plans", "rooflines", "traces", "prefill", "decode")
REPORT_LAST = ("report.json", "report.html")  # installed after every file they describe


# ---------------------------------------------------------------------------------------- JSON


def nonfinite_fields(data, path: str = "") -> Iterator[tuple[str, float]]:
    """(field path, value) of every NaN or infinite float in `data`: 'decode.total_time_s', 'ops[3].time_s'."""
    if isinstance(data, float):
        if not math.isfinite(data):
            yield path or "(the result)", data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from nonfinite_fields(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            yield from nonfinite_fields(value, f"{path}[{i}]")


def require_finite(data) -> None:
    """Raises NonFiniteResult naming the first non-finite field (text output checks this too)."""
    for field, value in nonfinite_fields(data):
        raise NonFiniteResult(field, value)


def dump_json(data, indent: int | None = 2) -> str:
    """The one JSON writer: sorted keys, no NaN or Infinity (`json.dumps(allow_nan=False)`).

    Raises:
        NonFiniteResult: a non-finite number, named by its field.
    """
    try:
        return json.dumps(data, indent=indent, sort_keys=True, allow_nan=False)
    except ValueError:
        require_finite(data)
        raise


# ------------------------------------------------------------------------------- path checks


def _nearest_existing(path: Path, option: str) -> Path:
    """The nearest existing ancestor of `path` (itself included), which must be a folder."""
    current = path
    while not current.exists() and not current.is_symlink():
        if current.parent == current:
            break
        current = current.parent
    if not current.is_dir():
        raise BadOutput(f"{option} {path}: {current} is a file, not a folder, so nothing can be created under it")
    return current


def _probe(folder: Path, option: str, shown: Path) -> None:
    """Create and remove a file in `folder`: the only test that holds for root and for /proc."""
    probe = folder / f".landscape-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as err:
        raise BadOutput(
            f"{option} {shown}: cannot create files in {folder} (creating one there failed: "
            f"{(err.strerror or str(err)).lower()})"
        ) from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def _check_path(path: str | os.PathLike | None, option: str) -> Path:
    if path is None or not str(path).strip():
        raise BadOutput(f"{option} needs a path, got {str(path or '')!r}")
    return Path(path)


def check_output_file(path: str | os.PathLike, option: str) -> Path:
    """Check, before any work, that a file can be written at `path` (its folders may be missing).

    Raises:
        BadOutput: an empty path, a folder at the path, a file among its parents, or a place
            where no file can be created.
    """
    p = _check_path(path, option)
    if p.is_dir():
        raise BadOutput(f"{option} {p}: is a folder; give a file path")
    if _special(p):  # a device or a pipe (/dev/null): written in place, never replaced
        if not os.access(p, os.W_OK):
            raise BadOutput(f"{option} {p}: cannot be written")
        return p
    folder = _nearest_existing(p.parent, option) if not p.exists() else p.parent
    _probe(folder, option, p)
    return p


def _special(path: Path) -> bool:
    """An existing path that is not a regular file: a device, a pipe or a socket."""
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def check_output_dir(path: str | os.PathLike, option: str) -> Path:
    """Check, before any work, that a folder can be created or written at `path`.

    Raises:
        BadOutput: an empty path, a file at the path or among its parents, or no write access.
    """
    p = _check_path(path, option)
    if p.exists() and not p.is_dir():
        raise BadOutput(f"{option} {p}: is a file, not a folder")
    _probe(_nearest_existing(p, option), option, p)
    return p


def _cannot_write(path: Path, err: OSError) -> BadOutput:
    return BadOutput(f"cannot write {path}: {err.strerror or err}")


def write_file(path: str | os.PathLike, text: str | None = None, writer: Callable[[Path], None] | None = None) -> Path:
    """Write a file atomically: `text`, or whatever `writer(tmp_path)` writes, goes to a temporary
    file beside it (same suffix), renamed over `path` when complete; removed on any failure.

    A device or a pipe (`/dev/null`, `/dev/stdout`) is written in place instead: renaming over it
    would replace the device node with a regular file.

    Raises:
        BadOutput: the file system refused (full, read-only...).
    """
    path = Path(path)
    if _special(path) and not path.is_dir():
        try:
            if writer is not None:
                writer(path)
            else:
                with open(path, "w") as f:
                    f.write(text or "")
        except OSError as err:
            raise _cannot_write(path, err) from None
        return path
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if writer is not None:
            writer(tmp)
        else:
            tmp.write_text(text or "")
        os.replace(tmp, path)
    except OSError as err:
        raise _cannot_write(path, err) from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return path


# ------------------------------------------------------------------------------ report folders


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (pending, not lost) while the block runs: an install is not cut in half."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, ValueError, OSError):  # no sigmask here, or not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class OutputDir:
    """A report folder written safely (see the module doc); a context manager held over the whole
    command, so that the checks and the lock come before the work.

        with OutputDir("out", force=False, option="--out") as out:
            ...                                    # the work
            written = out.write(lambda root: write_report(..., root))
    """

    def __init__(self, path: str | os.PathLike, force: bool = False, option: str = "--out"):
        self.path = check_output_dir(path, option)
        self.option, self.force = option, force
        self.abs = Path(os.path.abspath(self.path))
        self.lock_path = self.abs.with_name(self.abs.name + ".lock")
        self.staging = self.abs.with_name(f"{self.abs.name}.tmp-{os.getpid()}")
        self._lock_fd: int | None = None
        self.previous = self._previous_report()

    def _previous_report(self) -> list[str] | None:
        """The files an earlier run wrote here (its manifest), [] when a report is there without
        one, None when the folder holds no report."""
        if not self.abs.is_dir():
            return None
        present = [n for n in REPORT_NAMES if (self.abs / n).exists()]
        if not present:
            return None
        if not self.force:
            shown = ", ".join(present[:3]) + (", ..." if len(present) > 3 else "")
            raise BadOutput(
                f"{self.option} {self.path}: already holds a report ({shown}); pass --force to "
                f"replace the files an earlier run wrote there (files it did not write are kept)"
            )
        try:
            files = json.loads((self.abs / MANIFEST).read_text())["files"]
            return [f for f in files if isinstance(f, str) and ".." not in Path(f).parts and not Path(f).is_absolute()]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def __enter__(self) -> OutputDir:
        import fcntl

        for _ in range(3):  # the lock file is removed when released: retry if we opened a removed one
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as err:
                raise BadOutput(
                    f"{self.option} {self.path}: cannot create the lock {self.lock_path}: {err.strerror}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise BadOutput(
                        f"{self.option} {self.path}: another landscape run is writing it (lock {self.lock_path} "
                        f"is held); wait for it to finish or choose another folder"
                    ) from None
                raise
            try:
                same = os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino
            except OSError:
                same = False
            if same:
                self._lock_fd = fd
                return self
            os.close(fd)
        raise BadOutput(f"{self.option} {self.path}: could not take the lock {self.lock_path}")

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self.staging)
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.lock_path)
            os.close(self._lock_fd)
            self._lock_fd = None

    def write(self, writer: Callable[[str], object], command: str = "compare") -> list[str]:
        """Stage `writer(staging folder)`'s files, write the manifest and install them in place.

        Returns:
            The files written, relative to the folder, sorted (the manifest lists them).
        """
        try:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging.mkdir(parents=True)
            writer(str(self.staging))
            files = sorted(p.relative_to(self.staging).as_posix() for p in self.staging.rglob("*") if p.is_file())
            (self.staging / MANIFEST).write_text(
                dump_json({"written_by": f"landscape {command}", "files": files}) + "\n"
            )
            with _signals_held():
                self._install(files)
        except OSError as err:
            raise _cannot_write(self.path, err) from None
        return files

    def _install(self, files: list[str]) -> None:
        final = self.abs
        if not final.is_symlink() and (not final.exists() or (final.is_dir() and not any(final.iterdir()))):
            if final.exists():
                final.rmdir()
            final.parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.staging, final)
            return
        # A folder with other files in it: a file of the user's where the report writes one is refused
        # (only files an earlier run wrote, by its manifest, and the report's own two are replaced);
        # then make it stop looking complete, remove what our previous run wrote, move the new files
        # in, the report and the manifest last.
        ours = {*(self.previous or []), *REPORT_LAST, MANIFEST}
        theirs = [f for f in files if f not in ours and ((final / f).exists() or (final / f).is_symlink())]
        if theirs:
            shown = ", ".join(theirs[:3]) + (f" and {len(theirs) - 3} more" if len(theirs) > 3 else "")
            raise BadOutput(
                f"{self.option} {self.path}: {shown} is not a file an earlier run wrote (not in "
                f"{MANIFEST}), and this report writes one there; move it or choose another folder"
            )
        for name in (MANIFEST, *REPORT_LAST, *(self.previous or [])):
            target = final / name
            if target.is_file() or target.is_symlink():
                target.unlink()
                _remove_empty_parents(target.parent, final)
        last = [f for f in REPORT_LAST if f in files]
        for rel in [f for f in files if f not in last] + last + [MANIFEST]:
            target = final / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.staging / rel, target)
        shutil.rmtree(self.staging, ignore_errors=True)


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
