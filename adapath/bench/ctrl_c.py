"""Ctrl-C at random instants into the long commands: each must end with one line and exit 130,
keep nothing half-written, and its rerun must resume to the output an uninterrupted run gives.

Each command (``bank``, ``answer``, ``pathmind-answer``, ``pathmind-train``; batches of 4,
NUMBA_NUM_THREADS=2) runs twice uninterrupted on a generated graph (the reference; T: the second
run's wall time), then TRIES times SIGINT at a random instant in [0.5 s, T] and a rerun to the
end (docs/benchmarks/bench_ctrl_c.md). A try the command outran counts apart and shortens T.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from adapath.bench.inputs import names, parser, say, workdir
from adapath.bench.result import report
from adapath.bench.timing import timed

COMMANDS = ("bank", "answer", "pathmind-answer", "pathmind-train")


def cli(*args) -> list[str]:
    return [sys.executable, "-m", "adapath.cli", *map(str, args)]


def environment() -> dict:
    return dict(os.environ, NUMBA_NUM_THREADS="2", ADAPATH_PROGRESS_INTERVAL="1")


def run(args: list[str]) -> subprocess.CompletedProcess:
    done = subprocess.run(args, env=environment(), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done


def interrupted(args: list[str], delay: float) -> tuple[int | None, list[str]]:
    """(exit status, stderr lines) of ``args`` sent SIGINT after ``delay`` s (None: it finished)."""
    proc = subprocess.Popen(args, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    finished = True
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        finished = False
        proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=600)[1]
    # exit 0: the work was done and written before the signal arrived (it came during the exit)
    return (None if finished or proc.returncode == 0 else proc.returncode), err.splitlines()


def clean(code: int | None, lines: list[str]) -> bool:
    text = "\n".join(lines)
    return (code == 130 and bool(lines) and lines[-1].startswith("adapath: interrupted")
            and "Traceback" not in text and "SystemError" not in text)


def bank_output(folder: Path):
    import pyarrow.parquet as pq

    manifest = json.loads((folder / "manifest.json").read_text())
    rows = pq.read_table(folder / "paths.parquet").to_pylist()
    return manifest["complete"], sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def answers_output(path: Path):
    objects = [json.loads(line) for line in path.read_text().splitlines()]
    return sorted(json.dumps({k: v for k, v in o.items() if k != "usage"}, sort_keys=True)
                  for o in objects)


def model_output(folder: Path):
    from safetensors.numpy import load_file

    return {k: v.tobytes() for k, v in sorted(load_file(str(folder / "model.safetensors")).items())}


def strays(folder: Path) -> list[str]:
    """Temporary files or folders an interrupted write left beside its outputs."""
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and (".tmp" in p.name or ".old-" in p.name)]


def arguments():
    return parser(__doc__, {
        "tries": (20, "interrupted tries per command"),
        "train": (120, "generated training questions"), "test": (40, "generated test questions"),
        "commands": (",".join(COMMANDS), f"Of {', '.join(COMMANDS)}."),
        "work": (None, "work folder (default: a temporary one)", Path),
    }, scale=0.05, seed=0)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    commands = names("--commands", args.commands, COMMANDS)
    work = workdir(args.work, "bench-ctrl-c-")
    rng = random.Random(args.seed)
    kg, train, test = work / "kg", work / "train.jsonl", work / "test.jsonl"
    run(cli("kg", "synth", "--scale", args.scale, "--seed", 0, "--out", kg, "--force"))
    run(cli("dataset", "generate", "--kg", kg, "--n", args.train, "--seed", 1, "--out", train))
    run(cli("dataset", "generate", "--kg", kg, "--n", args.test, "--seed", 2, "--first-id", 100000, "--out", test))
    tries = work / "tries"

    def line_for(*args):
        return lambda out: cli(*args, "--out", out)

    plan = {  # command -> (its command line for an output, the output's name, its reading)
        "bank": (line_for("bank", "build", "--kg", kg, "--queries", f"biostrat:{train}", "--batch", 4,
                          "--workers", 2), "bank", bank_output),
        "answer": (line_for("answer", "--kg", kg, "--bank", work / "bank", "--queries", f"biostrat:{test}",
                            "--level", "all", "--encoder", "hashing", "--batch", 4), "answers.jsonl", answers_output),
        "pathmind-answer": (line_for("answer", "--method", "pathmind", "--kg", kg, "--model", work / "model",
                                     "--queries", f"biostrat:{test}", "--level", "all", "--batch", 4),
                            "pathmind.jsonl", answers_output),
        "pathmind-train": (line_for("pathmind", "train", "--kg", kg, "--queries", f"biostrat:{train}", "--encoder",
                                    "hashing", "--epochs", 2, "--batch", 4, "--threads", 2), "model", model_output),
    }
    needed = {"answer": ["bank"], "pathmind-answer": ["pathmind-train"]}
    references = {}
    for command in ("bank", "answer", "pathmind-train", "pathmind-answer"):  # each after what it needs
        if command not in commands and not any(command in needed.get(c, []) for c in commands):
            continue
        make, name, read = plan[command]
        run(make(work / name))  # the first run also compiles kernels and fills the graph's caches
        seconds = timed(run, make(work / "warm" / name))[0]  # T: a run as the tries make it
        references[command] = (seconds, read(work / name))
        if read(work / "warm" / name) != references[command][1]:
            sys.exit(f"{command}: two uninterrupted runs differ; nothing to compare a resumed run with")
        say(f"reference {command}: {references[command][0]:.1f} s")

    rows = []
    for command in commands:
        make, name, read = plan[command]
        seconds, expected = references[command]
        counts = dict.fromkeys(("interrupted", "clean_exit_130_one_line", "rerun_equals_reference",
                                "finished_first"), 0)
        for attempt in range(3 * args.tries):  # until TRIES tries were interrupted
            if counts["interrupted"] == args.tries:
                break
            shutil.rmtree(tries, ignore_errors=True)
            tries.mkdir()
            out = tries / name
            delay = rng.uniform(0.5, seconds)
            code, lines = interrupted(make(out), delay)
            if code is None:
                counts["finished_first"] += 1
                seconds = min(seconds, delay)
                continue
            counts["interrupted"] += 1
            left = strays(tries)
            ok = clean(code, lines) and not left and not (command == "pathmind-train" and out.exists())
            counts["clean_exit_130_one_line"] += ok
            if not ok:
                say(f"{command} try {attempt} (SIGINT at {delay:.2f} s): exit {code}, "
                    f"strays {left}; last lines:\n  " + "\n  ".join(lines[-6:]))
            again = subprocess.run(make(out), env=environment(), capture_output=True, text=True)
            same = again.returncode == 0 and read(out) == expected
            counts["rerun_equals_reference"] += same
            if not same:
                say(f"{command} try {attempt}: the rerun (exit {again.returncode}) differs "
                    "from the reference\n  " + again.stderr[-800:])
        rows.append({"command": command, "uninterrupted_s": round(references[command][0], 1),
                     "last_window_s": round(seconds, 1), **counts})
    report(args, rows,
           f"Ctrl-C at random instants: scale {args.scale}, {args.train} training and {args.test} test questions, "
           f"NUMBA_NUM_THREADS=2, batches of 4, seed {args.seed}")
