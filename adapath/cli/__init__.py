"""The ``adapath`` command line: one Typer app, one module per sub-command group.

Each module defines its commands on its own Typer app; this module mounts them. Heavy
packages are imported inside the commands, so ``adapath --help`` stays fast.
"""

from __future__ import annotations

import os
import signal
import sys

INTERRUPTED = "interrupted; nothing half-written was kept (rerun the command to start again)"

try:  # Ctrl-C while the command line loads ends as it does during the work: one line, exit 130
    from adapath.cli.answer import answer_cmd, methods_cmd
    from adapath.cli.bank import bank_app
    from adapath.cli.bench import bench_app, collect_env_cmd
    from adapath.cli.common import Commands, say
    from adapath.cli.dataset import dataset_app
    from adapath.cli.evaluate import eval_app
    from adapath.cli.kg import kg_app
    from adapath.cli.llm import llm_app
    from adapath.cli.pathmind import pathmind_app
    from adapath.cli.view import view_cmd
    from adapath.errors import InputError, Interrupted, os_error_line, os_error_status
except KeyboardInterrupt:
    print(f"adapath: {INTERRUPTED}", file=sys.stderr, flush=True)
    os._exit(130)  # nothing ran yet; see _interrupted_exit

app = Commands(
    help="adapath: multi-hop biomedical QA over knowledge graphs by path-finding.",
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None,
)
app.add_typer(kg_app, name="kg")
app.add_typer(dataset_app, name="dataset")
app.add_typer(bank_app, name="bank")
app.command("answer")(answer_cmd)
app.command("methods")(methods_cmd)
app.add_typer(eval_app, name="eval")
app.add_typer(pathmind_app, name="pathmind")
app.command("view")(view_cmd)
app.add_typer(llm_app, name="llm")
app.add_typer(bench_app, name="bench")
app.command("collect-env")(collect_env_cmd)


def _from_ctrl_c(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the exceptions ``exc`` was raised from."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _interrupted_exit(argv: list[str] | None) -> None:
    """Exit 130 after a Ctrl-C the command has answered with its line. A program exits at once:
    CPython turns the exit status of a process in which a KeyboardInterrupt once escaped code
    it ran through its C API (as a compiled library's import may) into death by SIGINT at the
    end, although the interrupt was handled. A call from code raises SystemExit."""
    if argv is not None:
        sys.exit(130)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def main(argv: list[str] | None = None) -> None:
    """The program (``argv`` None: the process's own arguments; a list: a call from code)."""
    try:
        app(args=argv, standalone_mode=True)
    except InputError as exc:
        say(f"adapath: error: {exc}")
        sys.exit(2)
    except Interrupted as exc:  # a long command's own account: what was kept, how to resume
        say(f"adapath: {exc}")
        _interrupted_exit(argv)
    except KeyboardInterrupt:
        say(f"adapath: {INTERRUPTED}")
        _interrupted_exit(argv)
    except SystemExit as exc:
        # Typer turns a Ctrl-C that no command handled into exit 130 before it reaches us
        if exc.code == 130 and _from_ctrl_c(exc):
            say(f"adapath: {INTERRUPTED}")
            _interrupted_exit(argv)
        raise
    except OSError as exc:  # a write (or read) the checks before the work could not foresee
        say(f"adapath: error: {os_error_line(exc)}")
        sys.exit(os_error_status(exc))
    finally:
        if argv is None:  # the command has ended and said so: a late Ctrl-C cannot cut the exit short
            signal.signal(signal.SIGINT, signal.SIG_IGN)
