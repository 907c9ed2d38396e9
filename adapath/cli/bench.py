"""`adapath bench`: one subcommand per benchmark (built from each bench's own options), `bench
list`, `bench compare` and `bench suite`; `adapath collect-env` beside them."""

from __future__ import annotations

import argparse
import enum
import inspect
import json
from pathlib import Path

import typer

from adapath.bench import BENCHES
from adapath.cli.common import command_group


def parameter_of(action: argparse.Action) -> inspect.Parameter:
    """A bench's argparse option as a Typer option: the same name, type, default and help."""
    default = None if action.default is argparse.SUPPRESS else action.default
    help_text = action.help or f"See the bench's description (default: {default})."
    if isinstance(action, argparse._StoreTrueAction):
        kind, default = bool, False
    elif action.choices:
        kind = enum.Enum(action.dest, [(str(c), str(c)) for c in action.choices], type=str)
        default = None if default is None else kind(str(default))
    else:
        kind = action.type or str
        kind = kind if default is not None else kind | None
    option = typer.Option(default, action.option_strings[0], *action.option_strings[1:], help=help_text)
    return inspect.Parameter(action.dest, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)


COMMON_PARAMETERS = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Path | None,
                                       default=typer.Option(None, option, help=text)) for name, option, text in (
    ("save_result", "--save-result", "Write the result JSON (figures, settings, machine) to this file."),
    ("result_dir", "--result-dir", "Write the result JSON into this folder as NAME-DATE-COMMIT.json (default: "
                                   "results/ in the bench cache)."),
    ("cache", "--cache", "The bench cache: graphs, questions and banks by what they are made of, reused by every "
                         "bench (default: ADAPATH_BENCH_CACHE, else ~/.cache/adapath/bench)."))]


def bench_command(name: str):
    """Bench ``name``'s command: its parser's options and where the result goes."""
    from adapath.bench import runner

    module = runner.module_of(name)
    parser = module.arguments()

    def command(**values) -> None:
        common = {p.name: values.pop(p.name) for p in COMMON_PARAMETERS}
        values = {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in values.items()}
        runner.run(name, runner.as_argv(parser, values), **common)

    parameters = [parameter_of(a) for a in runner.user_actions(parser)] + COMMON_PARAMETERS
    command.__signature__ = inspect.Signature(parameters)
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__doc__ = module.__doc__
    return command


bench_app = command_group("Benchmarks: each one a subcommand writing one result format; list, compare, suite.")


@bench_app.command("list")
def list_cmd() -> None:
    """Every bench, with what it measures."""
    width = max(map(len, BENCHES))
    for name, (_, line) in BENCHES.items():
        print(f"{name:<{width}}  {line}")


@bench_app.command("compare")
def compare_cmd(
    results: list[Path] = typer.Argument(..., help="Result files of the same bench (the first is the base)."),
) -> None:
    """The same bench from two runs or more side by side: each figure, its ratio to the first
    run's, and flags where the machines or thread counts differ."""
    from adapath.bench.result import compare, load

    print(compare([load(p) for p in results], [str(p) for p in results]))


@bench_app.command("suite")
def suite_cmd(
    suite: Path = typer.Argument(..., help="A suite file (bench/cpu.suite, bench/gpu.suite)."),
    result_dir: Path = typer.Option(Path("bench/out/suite"), "--result-dir",
                                    help="Where every bench's result, output and the summary go."),
    budget: int = typer.Option(0, "--budget", help="Seconds for the whole suite (0: the suite file's budget line)."),
    wheels: Path = typer.Option(None, "--wheels", help="Install the wheels in this folder first (a machine "
                                "without the suite's packages; --fetch-wheels downloads them)."),
    cap_factor: float = typer.Option(1.0, "--cap-factor", help="Multiply every bench's time cap (a slower or busier "
                                     "machine than the suite was written for)."),
    fetch_wheels: Path = typer.Option(None, "--fetch-wheels", help="Only download the suite's wheels into this "
                                      "folder (where pip works), and stop."),
) -> None:
    """Run every bench a suite file names, each with its time cap, and print one summary."""
    from adapath.bench import suite as suites

    if fetch_wheels is not None:
        suites.fetch_wheels(suites.read_suite(suite), fetch_wheels)
        return
    suites.run_suite(suite, result_dir, budget or None, wheels, cap_factor)


def collect_env_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print the block as JSON (as a result file holds it)."),
) -> None:
    """The machine a figure comes from: commit, date, CPU, memory, GPU, thread counts and
    library versions (paste it into an issue)."""
    from adapath.bench.environment import as_text, collect_env

    env = collect_env()
    print(json.dumps(env, indent=1) if as_json else as_text(env))


for _name, (_, _line) in BENCHES.items():
    bench_app.command(_name, short_help=_line)(bench_command(_name))
