"""One result format for every bench (figures, settings, inputs, machine; result.schema.json);
``compare`` sets results side by side with each figure's ratio; ``markdown`` renders one."""

from __future__ import annotations

import json
from pathlib import Path

from adapath.bench.environment import describe
from adapath.errors import InputError

FORMAT = "adapath-bench-result/1"
SCHEMA = Path(__file__).with_name("result.schema.json")
# the fields of a row that name it, in a list of rows (pathmind-speed's, encoder's, gpu's ...)
ROW_NAMES = ("name", "method", "model", "setting", "source", "route", "stage", "part", "executor")


def make(bench: str, command: str, settings: dict, figures, inputs: list[str], seconds: float, env: dict) -> dict:
    return {"format": FORMAT, "bench": bench, "command": command, "settings": settings, "figures": figures,
            "inputs": inputs, "seconds": round(seconds, 3), "environment": env}


def file_name(result: dict) -> str:
    """``NAME-DATE-COMMIT.json``: results of one bench sort by date."""
    env = result["environment"]
    date = env["date"].replace(":", "").replace("-", "")
    return f"{result['bench']}-{date}-{(env['commit'] or 'nocommit')[:8]}.json"


def load(path: str | Path) -> dict:
    try:
        result = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable result file ({exc})") from None
    if not isinstance(result, dict) or result.get("format") != FORMAT:
        raise InputError(f"{path}: not an adapath bench result (no format {FORMAT!r})")
    return result


# ---------------------------------------------------------------- figures as named numbers
def row_name(row: dict, index: int) -> str:
    parts = [str(row[k]) for k in ROW_NAMES if isinstance(row.get(k), str) and row[k]]
    return "/".join(parts) or str(index)


def flatten(value, prefix: str = "") -> dict[str, float]:
    """Every number under ``value`` by its dotted path (a list of rows by their names)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {prefix: value}
    items = value.items() if isinstance(value, dict) else [] if not isinstance(value, list) else [
        (row_name(v, i) if isinstance(v, dict) else str(i), v) for i, v in enumerate(value)]
    return {k: v for key, inner in items
            for k, v in flatten(inner, f"{prefix}.{key}" if prefix else str(key)).items()}


# ---------------------------------------------------------------- compare
def environment_flags(envs: list[dict]) -> list[str]:
    """Where the runs' machines differ in a way that moves a figure: CPU, cores, memory, GPU, threads."""
    def differ(label, values):
        shown = [str(v) for v in values]
        return [] if len(set(shown)) == 1 else [f"{label} differs: " + " | ".join(shown)]

    flags = differ("machine: CPU", [e["cpu"]["model"] for e in envs])
    flags += differ("machine: cores", [f"{e['cpu']['usable_cores']} of {e['cpu']['cores']}" for e in envs])
    flags += differ("machine: memory GiB", [e["memory_gib"] for e in envs])
    flags += differ("machine: GPU", [", ".join(g["model"] for g in e["gpu"]) if e["gpu"] else "none" for e in envs])
    flags += differ("thread count: numba", [e["threads"]["numba"] for e in envs])
    flags += differ("thread count: torch", [e["threads"]["torch"] for e in envs])
    for variable in sorted({v for e in envs for v in e["threads"]["variables"]}):
        flags += differ(f"thread count: {variable}", [e["threads"]["variables"].get(variable) for e in envs])
    return flags


def compare(results: list[dict], names: list[str]) -> str:
    """``bench compare``'s table: each shared figure per run and its ratio to the first run's."""
    if len(results) < 2:
        raise InputError("compare needs two result files or more")
    benches = {r["bench"] for r in results}
    if len(benches) > 1:
        raise InputError(f"compare: the results are of different benches ({', '.join(sorted(benches))})")
    letters = [chr(ord("A") + i) for i in range(len(results))]
    lines = [f"bench {results[0]['bench']}"]
    for letter, name, r in zip(letters, names, results):
        env = r["environment"]
        lines.append(f"  {letter} = {name}: commit {(env['commit'] or 'unknown')[:10]}{' (dirty)' if env['dirty'] else ''}, "
                     f"{env['date']}, {describe(env)}")
    lines += [f"! {flag}" for flag in environment_flags([r["environment"] for r in results])]
    for key in sorted({k for r in results for k in r["settings"]}):
        values = [json.dumps(r["settings"].get(key)) for r in results]
        if len(set(values)) > 1:
            lines.append(f"  setting {key} differs: " + " | ".join(values))
    flat = [flatten(r["figures"]) for r in results]
    keys = [k for k in flat[0] if all(k in f for f in flat[1:])]
    if not keys:
        lines.append("(no figure in common)")
        return "\n".join(lines)
    width = max(12, *(len(k) for k in keys)) + 2
    head = f"{'figure':<{width}}" + "".join(f"{letter:>14}" for letter in letters)
    head += "".join(f"{f'{letter}/A':>10}" for letter in letters[1:])
    lines += ["", head]
    for key in keys:
        values = [f[key] for f in flat]
        row = f"{key:<{width}}" + "".join(f"{v:>14.6g}" for v in values)
        row += "".join(f"{(f'{v / values[0]:.3f}x' if values[0] else '-'):>10}" for v in values[1:])
        lines.append(row)
    return "\n".join(lines)


# ---------------------------------------------------------------- markdown
def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value).replace("|", "\\|")


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def figure_tables(figures, prefix: str = "") -> list[str]:
    """The figures as markdown tables: scalars in one, a dict of dicts of scalars a matrix, a list
    of rows a column per field (a dict field a column per key), any other dict its own tables."""
    lines, scalars = [], []
    items = figures.items() if isinstance(figures, dict) else [("rows", figures)]
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            columns = list(dict.fromkeys(k for v in value for k in v if not isinstance(v[k], dict)))  # lists as JSON
            nested = list(dict.fromkeys(k for v in value for k in v if isinstance(v[k], dict)))
            sub = {n: list(dict.fromkeys(k for v in value for k in v.get(n, {}))) for n in nested}
            header = columns + [f"{n} {k}" for n in nested for k in sub[n]]
            rows = [[v.get(c, "") for c in columns] + [v.get(n, {}).get(k, "") for n in nested for k in sub[n]]
                    for v in value]
            lines += ["", f"**{name}**", ""] + _table(header, rows)
        elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()) \
                and all(not isinstance(x, (dict, list)) for v in value.values() for x in v.values()):
            inner = list(dict.fromkeys(k for v in value.values() for k in v))
            lines += ["", f"**{name}**", ""] + _table([""] + inner, [[k] + [v.get(i, "") for i in inner]
                                                                    for k, v in value.items()])
        elif isinstance(value, dict) and value and all(not isinstance(v, (dict, list)) for v in value.values()):
            lines += ["", f"**{name}**", ""] + _table(["", "value"], [[k, v] for k, v in value.items()])
        elif isinstance(value, dict) and value:
            lines += figure_tables(value, name + ".")
        else:
            scalars.append((name, value))
    if scalars:
        head = ["", f"**{prefix.rstrip('.')}**", ""] if prefix else []
        lines = head + _table(["figure", "value"], [list(s) for s in scalars]) + lines
    return lines


def report(args, figures, title: str) -> None:
    """A bench's end: its title and figure tables printed, the figures written to ``--json``."""
    print(title + "\n" + "\n".join(figure_tables(figures)).lstrip("\n"), flush=True)
    if getattr(args, "json", None):
        args.json.write_text(json.dumps(figures, indent=2))


def markdown(result: dict) -> str:
    """A result as its docs page shows it: tables, machine, commit, date, rerun command."""
    env = result["environment"]
    sha = (env["commit"] or "unknown")[:10]
    lines = figure_tables(result["figures"])
    lines += ["", f"Measured on {describe(env)}; numba threads {env['threads']['numba']}; commit `{sha}`"
              f"{' (with uncommitted changes)' if env['dirty'] else ''}; {env['date']}; {result['seconds']:.0f} s. "
              "Rerun:", "", "```bash", result["command"], "```"]
    return "\n".join(lines)
