"""The error types a user sees (a bad file, a bad argument, a bad record; a long command
stopped by Ctrl-C), and how a failed write or read (an ``OSError``) reads as one line."""

from __future__ import annotations

import contextlib
import errno
import signal
import threading
from collections.abc import Iterator


class InputError(Exception):
    """A user mistake. The CLI prints it as one line and exits with status 2.

    The message names the file (and line, where there is one) and what is wrong.
    """


class Interrupted(Exception):
    """Ctrl-C stopped a long command. The message says what was kept and how to resume (or
    that nothing was written); the CLI prints it as one line and exits with status 130."""


# ------------------------------------------------------------- Ctrl-C between kernel calls
# A KeyboardInterrupt raised while a compiled (Numba) kernel's dispatcher is on the stack
# surfaces as "SystemError: CPUDispatcher(...) returned a result with an exception set" and a
# traceback. Inside the long loops Ctrl-C therefore only sets a flag, and the loops raise
# KeyboardInterrupt themselves between kernel calls (``stop_if_interrupted``), where the
# commands turn it into their one line and exit 130.
_ctrl_c = threading.Event()
_deferring = 0  # nesting depth of ``ctrl_c_between_steps`` in the main thread


def _note_ctrl_c(signum, frame) -> None:
    if _ctrl_c.is_set():  # a second Ctrl-C while the first waits: stop at once
        raise KeyboardInterrupt
    _ctrl_c.set()


def stop_if_interrupted() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed since the last check (a safe point of a
    long loop: no kernel is running, nothing is half-written)."""
    if _ctrl_c.is_set():
        _ctrl_c.clear()
        raise KeyboardInterrupt


@contextlib.contextmanager
def ctrl_c_between_steps() -> Iterator[None]:
    """While the block runs, Ctrl-C is noted rather than raised; the block's loops call
    ``stop_if_interrupted`` between kernel calls, and a Ctrl-C no check saw is raised when the
    block ends. Where Python's own handler is not in place (a worker thread, SIGINT ignored,
    a handler of the caller's) the block runs as it is."""
    global _deferring
    if threading.current_thread() is not threading.main_thread() or (
            _deferring == 0 and signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    if _deferring == 0:
        _ctrl_c.clear()
        signal.signal(signal.SIGINT, _note_ctrl_c)
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if _deferring == 0:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    stop_if_interrupted()


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
