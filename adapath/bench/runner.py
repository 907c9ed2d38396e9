"""Runs one bench by name: its own ``main`` prints its table and writes its figures; the
runner wraps them with the settings, the inputs and the machine into one result file."""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import shlex
import tempfile
from pathlib import Path

from adapath.bench import BENCHES, inputs, result
from adapath.bench.environment import collect_env
from adapath.bench.timing import timed
from adapath.errors import InputError
from adapath.fsutil import atomic_file, check_writable

# the bench's own figures file, given by the runner (not a user's option)
FIGURES_OPTION = "--json"


def module_of(name: str):
    if name not in BENCHES:
        raise InputError(f"no bench {name!r}; `adapath bench list` shows them")
    return importlib.import_module(BENCHES[name][0])


def user_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options a user gives: not --help, not the figures file, not hidden ones."""
    return [a for a in parser._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction)
            and FIGURES_OPTION not in a.option_strings and a.help != argparse.SUPPRESS]


def as_argv(parser: argparse.ArgumentParser, values: dict) -> list[str]:
    """The bench's own command line for option values by destination (defaults left out)."""
    argv = []
    for action in user_actions(parser):
        value = values.get(action.dest, action.default)
        if isinstance(action, argparse._StoreTrueAction):
            argv += [action.option_strings[0]] if value else []
        elif value is not None and value != action.default:
            argv += [action.option_strings[0], str(value)]
    return argv


def settings_of(parser: argparse.ArgumentParser, argv: list[str]) -> dict:
    parsed = vars(parser.parse_args(argv))
    skip = {a.dest for a in parser._actions if FIGURES_OPTION in a.option_strings or a.help == argparse.SUPPRESS}
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in parsed.items() if k not in skip}


def run(name: str, argv: list[str], save_result: Path | None = None, result_dir: Path | None = None,
        cache: Path | None = None) -> Path:
    """Run bench ``name`` with its options ``argv``; write and return its result file."""
    module = module_of(name)
    settings = settings_of(module.arguments(), argv)
    if save_result is not None:
        check_writable(save_result)
    if cache is not None:
        os.environ[inputs.ENV] = str(cache)  # children of the bench read it too
    shared = inputs.inputs()
    with tempfile.TemporaryDirectory(prefix=f"adapath-bench-{name}-") as tmp:
        figures_path = Path(tmp) / "figures.json"
        gc.collect()
        gc.freeze()  # what the command line loaded stays out of the collector's passes over the bench's objects
        seconds = timed(module.main, [*argv, FIGURES_OPTION, str(figures_path)])[0]
        if not figures_path.is_file():
            raise InputError(f"bench {name} wrote no figures (nothing to record)")
        figures = json.loads(figures_path.read_text())
    made = result.make(name, shlex.join(["adapath", "bench", name, *argv]), settings, figures, list(shared.used),
                       seconds, collect_env())
    path = save_result or (result_dir or inputs.cache_root() / "results") / result.file_name(made)
    with atomic_file(path) as handle:
        handle.write(json.dumps(made, indent=1) + "\n")
    inputs.say(f"bench {name}: result in {path}")
    return path
