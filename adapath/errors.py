"""The error types a user sees (a bad file, a bad argument, a bad record; a long command
stopped by Ctrl-C), and how a failed write or read (an ``OSError``) reads as one line."""

from __future__ import annotations

import errno


class InputError(Exception):
    """A user mistake. The CLI prints it as one line and exits with status 2.

    The message names the file (and line, where there is one) and what is wrong.
    """


class Interrupted(Exception):
    """Ctrl-C stopped a long command. The message says what was kept and how to resume (or
    that nothing was written); the CLI prints it as one line and exits with status 130."""


# Faults of the machine, not of the command line: the CLI exits 1 on these, 2 on the others
# (a folder that cannot be written, a file where a folder should be, a missing file).
MACHINE_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EIO", "ENOMEM", "EFBIG")
                           if hasattr(errno, name))


def os_error_line(exc: OSError) -> str:
    """An ``OSError`` as one line naming its path(s): ``out/x.jsonl: No space left on device``."""
    reason = exc.strerror or str(exc)
    if exc.filename is not None and exc.filename2 is not None:
        return f"{exc.filename} -> {exc.filename2}: {reason}"
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason


def os_error_status(exc: OSError) -> int:
    """The exit status of a command stopped by ``exc``: 1 for a fault of the machine (disk
    full, quota, I/O error, out of memory, a lost connection), 2 otherwise."""
    return 1 if exc.errno in MACHINE_ERRNOS or isinstance(exc, (ConnectionError, TimeoutError)) else 2
