"""Writing files so that no reader ever sees half of one: atomic writes and output checks.

Every file codeworld writes for a user (a run's records, a fitted program, a saved policy, a
buffer, a report page) goes through `atomic_output` or `write_atomic`, and every output the
user names is checked with `check_output` before the work that makes it. This module sits
below every other (it imports nothing of codeworld), so any layer can write through it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


class RunWriteError(OSError):
    """A file of the run could not be written; no part of it was left behind.

    ``errno``, ``strerror`` and ``filename`` are those of the failed write; ``str(error)`` is one
    line for the user.
    """

    def __init__(self, path: Path, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.message = f"could not write {path}: {cause.strerror or cause}"
        if cause.errno in (errno.ENOSPC, errno.EDQUOT):
            self.message += " (free some space, then resume the run)"

    def __str__(self) -> str:
        return self.message


_UMASK = os.umask(0o022)  # read once (it can only be read by setting it), and put back
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """``with atomic_output(path) as tmp:`` write the file ``tmp`` (any writer: text, a zip, a
    saved policy); when the block ends without error, ``tmp`` replaces ``path`` in one rename.

    The parent folder is created; ``tmp`` is a new empty file beside ``path`` (so the rename
    stays on one file system), named with ``suffix`` at its end for writers that insist on one
    (``.zip``).

    Raises:
        RunWriteError: the folder, the temporary file or the rename failed (a full disk, a quota,
            permissions); the temporary file is removed and ``path`` is as it was. An error raised
            in the block also removes the temporary file, and is raised as it is.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp" + suffix)
        os.close(fd)
        yield Path(tmp)
        # mkstemp's file is private (0600); the result gets the mode a plain write would give
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, RunWriteError):
            raise RunWriteError(path, exc) from exc
        raise


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, flushed to disk, and a rename
    (`atomic_output`).

    Raises:
        RunWriteError: the directory, the temporary file or the rename failed (a full disk, a
            quota, permissions); the temporary file is removed and ``path`` is as it was.
    """
    data = memoryview(text.encode("utf-8"))
    with atomic_output(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY)
        try:
            while data:
                data = data[os.write(fd, data):]
            # A full disk may show only here (delayed allocation, network file systems).
            os.fsync(fd)
        finally:
            os.close(fd)


def check_output(path: str | os.PathLike, *, folder: bool = False, empty: bool = False) -> Path:
    """Make sure an output the user named can be written, before the work that makes it: its
    folder is created and a trial file written and removed there.

    Args:
        path: a file to be written (``folder=False``) or a folder to write files into.
        folder: whether ``path`` names a folder.
        empty: the folder must be new or empty (a run's own folder, which must not mix its files
            with the user's).

    Returns:
        ``path`` as a `Path`.

    Raises:
        ValueError: a file where a folder is wanted, or a folder where a file is, or (with
            ``empty``) a folder that holds files.
        RunWriteError: the folder cannot be created or written in (permissions, a full disk).
    """
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise ValueError(f"{path} is a file, not a folder")
    if empty and path.is_dir() and any(path.iterdir()):
        raise ValueError(f"{path} is not empty: a run needs a new or empty folder (choose "
                         "another --out)")
    if not folder and path.is_dir():
        raise ValueError(f"{path} is a folder, not a file")
    where = path if folder else path.parent
    for above in (where, *where.parents):
        if above.exists() and not above.is_dir():
            raise ValueError(f"cannot write {path}: {above} is a file, not a folder")
        if above.exists():
            break
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, trial = tempfile.mkstemp(dir=where, prefix=".codeworld-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(trial)
    except OSError as exc:
        raise RunWriteError(where, exc) from exc
    return path
