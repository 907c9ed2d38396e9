"""Atomic output: build under a temporary name beside the target, rename at the end."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def current_umask() -> int:
    """The process umask (read by setting and restoring it: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _as_if_created(path: Path, directory: bool) -> None:
    """Give a temporary file or folder the mode a plain create would have given it: mkstemp
    and mkdtemp make them private (0600/0700), which would hide shared outputs."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


def give_created_modes(path: str | os.PathLike) -> None:
    """Give ``path`` (a file, or a folder and everything in it) the modes a plain create under
    the umask gives: writers that make private files (mkstemp, safetensors: 0600) would hide
    shared outputs."""
    path = Path(path)
    _as_if_created(path, directory=path.is_dir())
    if path.is_dir():
        for place, folders, files in os.walk(path):
            for name in folders:
                _as_if_created(Path(place) / name, directory=True)
            for name in files:
                _as_if_created(Path(place) / name, directory=False)


def name_the_path(exc: BaseException, target: str | os.PathLike) -> None:
    """An ``OSError`` that names no file (a write that ran out of disk) names ``target``, the
    output it was writing, so the one line the CLI prints says where."""
    if isinstance(exc, OSError) and exc.filename is None:
        exc.filename = str(target)


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary directory that becomes ``target`` only if the block succeeds.

    On any exception the temporary directory is removed and ``target`` is untouched.
    """
    target = Path(target)
    if target.exists() and not overwrite:
        from adapath.errors import InputError

        raise InputError(f"{target}: already exists (pass --force to replace it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    _as_if_created(tmp, directory=True)
    try:
        yield tmp
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        name_the_path(exc, target)
        raise
    give_created_modes(tmp)
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike, mode: str = "w") -> Iterator:
    """Open a temporary file beside ``target``; it replaces ``target`` only on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    _as_if_created(Path(tmp), directory=False)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        name_the_path(exc, target)
        raise


def check_writable(out: str | os.PathLike, folder: bool = False) -> None:
    """Fail now, before any work, when the output ``out`` (a file, or with ``folder`` a folder)
    cannot be written: a file where a folder should be (``test.jsonl/out.jsonl``), a folder
    where the file should be, a folder that refuses writes (permissions, a read-only file
    system). Raises ``InputError`` naming ``out`` as given; a fault of the machine found on the
    way (a full disk) is raised as the ``OSError`` it is. Writes nothing: a probe file is made
    and removed in the folder that would receive the output (and inside ``out``, an existing
    folder that a resumed run writes into)."""
    from adapath.errors import MACHINE_ERRNOS, InputError

    out = Path(out)
    if out.is_dir() and not folder:
        raise InputError(f"{out}: is a folder; give a file name")
    if out.exists() and folder and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder")
    here = out.parent  # the nearest existing folder up from the output (created on the way)
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise InputError(f"{out}: cannot be written: {here} is a file, not a folder")
    places = [out, here] if folder and out.is_dir() else [here]
    for place in places:
        try:
            fd, probe = tempfile.mkstemp(prefix=".adapath-write-check-", dir=place)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            if exc.errno in MACHINE_ERRNOS:
                raise
            raise InputError(f"{out}: cannot be written: {place} refuses writes ({exc.strerror or exc})") from None
    if out.is_file():  # a result file a resumed run appends to
        try:
            with open(out, "ab"):
                pass
        except OSError as exc:
            if exc.errno in MACHINE_ERRNOS:
                raise
            raise InputError(f"{out}: cannot be written ({exc.strerror or exc})") from None
