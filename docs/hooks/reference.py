"""MkDocs hook: the reference pages, generated from the code at build time so they cannot drift.

- ``reference/cli.md``: every command of the Typer app, with every argument and option;
- ``reference/methods.md``: every registered method (name, paper, official repository,
  parameters, deviations) from ``adapath.methods.registry.all_methods()``;
- in ``reference/formats.md`` and ``getting-started/install.md``, the markers ``<!-- generated:NAME -->`` are replaced by tables
  built from the Path-Bank's Parquet schema and the result line's fields, and by the README's
  two set-up commands.

The generated pages are never written into docs/; ``tests/test_docs.py`` imports this file to
check that the CLI page lists every option.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # document this checkout, whatever mkdocs' own sys.path holds
    sys.path.insert(0, str(ROOT))


def _cell(text) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def walk_commands(command, path=()):
    """(path, click command) for the root and every command and group under it, in order."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from walk_commands(sub, path + (name,))


def root_command():
    import typer

    from adapath.cli import app

    return typer.main.get_command(app)


def _param_rows(command, context) -> list[str]:
    rows = []
    for param in command.get_params(context):
        if param.param_type_name == "argument":
            name = f"`{param.metavar or param.name.upper()}`"
            kind = "argument" + ("" if param.required else ", optional")
            help_text = getattr(param, "help", None) or ""
        else:
            name = ", ".join(f"`{opt}`" for opt in (*param.opts, *param.secondary_opts))
            record = param.get_help_record(context)
            shown = record[0] if record else ""
            metavar = shown.split(" ", 1)[1] if " " in shown and not param.is_flag else ""
            kind = "flag" if param.is_flag else (f"`{metavar.strip()}`" if metavar else "value")
            if param.multiple:
                kind += ", repeatable"
            help_text = param.help or ""
        default = getattr(param, "default", None)
        shown_default = "" if default in (None, (), [], "") or param.required or callable(default) else f"`{default}`"
        if param.required:
            shown_default = "required"
        rows.append(f"| {name} | {_cell(kind)} | {shown_default} | {_cell(help_text)} |")
    return rows


def cli_reference_markdown() -> str:
    root = root_command()
    context = root.make_context("adapath", [], resilient_parsing=True)
    out = [
        "# Command line",
        "",
        "Generated from the `adapath` Typer app at build time: every command, argument and option.",
        "`adapath COMMAND --help` prints the same.",
        "",
    ]
    for path, command in walk_commands(root):
        if not path:
            continue
        is_group = hasattr(command, "commands")
        runs_alone = not is_group or getattr(command, "invoke_without_command", False)
        out += [f"## `adapath {' '.join(path)}`", ""]
        if command.help:
            out += [command.help.strip().split("\f")[0].strip(), ""]
        if is_group:
            subs = ", ".join(f"`{name}`" for name in command.commands)
            out += [f"Sub-commands: {subs}.", ""]
        if runs_alone:
            arguments = [p for p in command.params if p.param_type_name == "argument"]
            pieces = ["[OPTIONS]"] + [(p.metavar or p.name.upper()) if p.required else f"[{p.metavar or p.name.upper()}]"
                                      for p in arguments]
            if is_group:
                pieces.append("[COMMAND [ARGS]...]")
            usage = " ".join(pieces)
            out += ["```text", f"adapath {' '.join(path)} {usage}".rstrip(), "```", ""]
            out += ["| argument / option | takes | default | what |", "|---|---|---|---|"]
            out += _param_rows(command, context)
            out.append("")
    return "\n".join(out)


def methods_reference_markdown() -> str:
    from adapath.methods.registry import all_methods

    out = [
        "# Methods",
        "",
        "Generated from the method registry (`adapath.methods.registry.all_methods()`) at build time;",
        "`adapath methods` prints a compact table of them and `adapath methods NAME` (or `--long`) the whole of",
        "each. Parameters are set with `adapath answer --param NAME=VALUE`.",
        "",
        "| method | what | paper | official code | needs | LLM calls per question |",
        "|---|---|---|---|---|---|",
    ]
    methods = all_methods()
    for spec in methods.values():
        repo = f"[{spec.repository}](https://github.com/{spec.repository})" if spec.repository else "none"
        needs = ", ".join([{"required": "`--llm`", "optional": "`--llm` (optional)", "none": ""}[spec.llm]]
                          + [f"`--{need}`" for need in spec.needs])
        out.append(f"| [`{spec.name}`](#{spec.name}) | {_cell(spec.summary)} | {_cell(spec.paper)} | {repo} "
                   f"| {needs.strip(', ')} | {_cell(spec.calls) or '-'} |")
    out.append("")
    for spec in methods.values():
        out += [f"## `{spec.name}` {{#{spec.name}}}", "", _cell(spec.summary), "",
                f"- Paper: {_cell(spec.paper)}",
                f"- Official code: {('https://github.com/' + spec.repository) if spec.repository else 'none'}",
                f"- LLM: {spec.llm}; LLM calls per question: {_cell(spec.calls) or 'not stated'} (D = max_depth, "
                f"N = width); path-finding (Table 4 rows): {'yes' if spec.path_finding else 'no'}", ""]
        if spec.params:
            out += ["| parameter | default | what |", "|---|---|---|"]
            out += [f"| `{p.name}` | `{p.default}` | {_cell(p.help)} |" for p in spec.params]
            out.append("")
        else:
            out += ["No parameters.", ""]
        if spec.deviations:
            out += ["Deviations from the official code:", ""]
            out += [f"- {_cell(text)}" for text in spec.deviations]
        else:
            out += ["Deviations from the official code: none recorded."]
        out.append("")
    return "\n".join(out)


def bank_schema_markdown() -> str:
    from adapath.bank.store import PATH_SCHEMA

    rows = ["| column | Arrow type |", "|---|---|"]
    rows += [f"| `{f.name}` | `{f.type}` |" for f in PATH_SCHEMA]
    return "\n".join(rows)


def result_fields_markdown() -> str:
    import dataclasses

    from adapath.contract import _SHARED, Result

    types = {f.name: f.type for f in dataclasses.fields(Result)}
    rows = ["| field | Python type |", "|---|---|"]
    rows += [f"| `{name}` | `{_cell(types[name])}` |" for name in _SHARED]
    return "\n".join(rows)


def readme_setup_block(name: str) -> str:
    """The fenced command after ``<!-- setup:NAME -->`` in README.md, as .ci/run extracts it."""
    readme = (ROOT / "README.md").read_text()
    match = re.search(rf"^<!-- setup:{name} -->\n(```bash\n.*?\n```)$", readme, re.S | re.M)
    if not match:
        raise ValueError(f"README.md has no <!-- setup:{name} --> command")
    return match.group(1)


GENERATED_PAGES = {
    "reference/cli.md": cli_reference_markdown,
    "reference/methods.md": methods_reference_markdown,
}
MARKERS = {
    "bank-schema": bank_schema_markdown,
    "result-fields": result_fields_markdown,
    "setup-main": lambda: readme_setup_block("main"),
    "setup-test": lambda: readme_setup_block("test"),
}


def on_files(files, config):
    from mkdocs.structure.files import File

    for path, make in GENERATED_PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files


def on_page_markdown(markdown, page, config, files):
    def fill(match):
        name = match.group(1)
        if name not in MARKERS:
            raise ValueError(f"{page.file.src_path}: unknown generated block {name!r}")
        return MARKERS[name]()

    return re.sub(r"<!-- generated:([\w-]+) -->", fill, markdown)
