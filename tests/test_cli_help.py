"""Every command's options: help text on each, flags shown without a value placeholder, and
one encoder default across commands (checked by walking the whole command tree)."""

import typer

from adapath.cli import app


def walk(command, path=()):
    yield path, command
    if hasattr(command, "commands"):  # a group (Typer's own click classes, so no isinstance)
        for name, sub in command.commands.items():
            yield from walk(sub, path + (name,))


def options():
    root = typer.main.get_command(app)
    for path, command in walk(root):
        for param in command.params:
            if param.param_type_name == "option":
                yield " ".join(path), param


def test_the_walk_finds_every_command_group():
    names = {path for path, _ in options()}
    for expected in ("kg embed", "bank build", "answer", "eval compare", "pathmind train", "dataset topics",
                     "llm serve", "view"):
        assert expected in names


def test_every_option_has_help():
    missing = [f"{path} {param.opts[0]}" for path, param in options()
               if param.opts[0] != "--help" and not (param.help or "").strip()]
    assert missing == []


def test_flags_show_no_value_and_valued_options_show_what_they_take():
    root = typer.main.get_command(app)
    context = root.make_context("adapath", [], resilient_parsing=True)
    for path, param in options():
        record = param.get_help_record(context)
        shown = record[0] if record else ""
        if param.is_flag:
            assert "<" not in shown and "BOOL" not in shown.upper(), f"{path}: {shown}"
        elif param.opts[0] != "--help":
            assert " " in shown, f"{path}: {shown} shows no value placeholder"


def test_one_encoder_default_and_help_across_commands():
    # a bench picks the encoder its measurement needs (hashing for speed tables): not a user default
    encoders = [(path, param.default, param.help) for path, param in options()
                if param.opts[0] == "--encoder" and not path.startswith("bench ")]
    assert len(encoders) >= 4  # answer, dataset topics, kg embed, pathmind train ...
    assert len({default for _, default, _ in encoders}) == 1, encoders
    assert len({text for _, _, text in encoders}) == 1, encoders


def test_usage_lines_name_arguments_in_upper_case(capsys):
    from tests.conftest import run_cli

    # the usual forms: a required argument bare, an optional one in brackets, a repeated one with ...
    expected = {("kg", "info"): "[OPTIONS] GRAPH_DIR", ("eval", "compare"): "[OPTIONS] A B",
                ("kg", "import", "hpo"): "[OPTIONS] [DIRECTORY]",
                ("kg", "import", "biostrat"): "[OPTIONS] RECORDS..."}
    for path, usage in expected.items():
        code, out, _ = run_cli([*path, "--help"], capsys)
        assert code == 0 and out.splitlines()[0].endswith(f"{' '.join(path)} {usage}"), out.splitlines()[0]
    root = typer.main.get_command(app)
    for path, command in walk(root):
        context = command.make_context(" ".join(path) or "adapath", [], resilient_parsing=True)
        usage = command.get_usage(context)
        assert "{" not in usage, usage
    code, _, err = run_cli(["kg", "info"], capsys)
    assert code == 2 and "Missing argument 'GRAPH_DIR'" in err
