"""`adapath bench gpu` runs anywhere: every part prints a row, skipped with a reason where its
package or device is missing; the tiny Llama it writes for vLLM loads and generates. The GPU
suite (bench/gpu.suite) runs end to end with NumPy standing in for CuPy."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_check_gpu_prints_every_part_with_a_reason(tmp_path):
    out = tmp_path / "gpu.json"
    done = subprocess.run([sys.executable, "-m", "adapath.cli", "bench", "gpu", "--scale", "0.01",
                           "--queries", "16", "--cpu-queries", "8", "--answer-questions", "2",
                           "--workdir", str(tmp_path / "work"), "--save-result", str(out),
                           "--cache", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    table = done.stdout.splitlines()
    rows = json.loads(out.read_text())["figures"]["rows"]
    parts = ["cupy PPR vs CPU kernel", "bank build on the GPU", "FAISS on the GPU", "node embedding on CUDA",
             "vLLM answer end to end"]
    assert [r["part"] for r in rows] == parts
    for row in rows:
        assert row["status"] in ("ok", "skipped"), row
        assert row["detail"].strip(), row
        assert any(line.startswith(f"| {row['part']} | {row['status']} |") for line in table)

    tiny = tmp_path / "work" / "tiny-llama"
    if not (tiny / "config.json").is_file():
        pytest.skip("transformers not installed: no tiny model written")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = json.loads((tiny / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert sum(p.stat().st_size for p in tiny.iterdir()) < 10e6
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Which drug treats migraine?"}],
                                           tokenize=False, add_generation_prompt=True)
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    assert tokenizer.decode(ids[0]) == prompt  # byte-level BPE: nothing lost
    with torch.no_grad():
        out_ids = model.generate(ids, max_new_tokens=3, do_sample=False)
    assert out_ids.shape[1] == ids.shape[1] + 3 or tokenizer.eos_token_id in out_ids[0, ids.shape[1]:]


def test_gpu_suite_runs_end_to_end_with_numpy_standing_in_for_cupy(tmp_path):
    """bench/gpu.suite through `adapath bench suite` on this machine, with tests/fake_cupy
    (NumPy under CuPy's name) in place of a GPU and a tiny graph: every bench runs and writes
    its result, the gpu bench's GPU bank build finds the CPU build's paths, the bank bench's GPU
    builds (batch from the "device's" free memory) too, the reasoner's SFT steps run (on the
    CPU, a tiny model for SmolLM2), PathMind's epoch, validation and answering run in two
    settings that answer alike, and the bank's result holds the per-pair stage's scaling. The
    plumbing, not the figures."""
    import importlib.util
    import os

    fine_tuning = all(importlib.util.find_spec(m) for m in ("trl", "peft", "transformers"))
    env = dict(os.environ, SUITE_SCALE="0.01", SUITE_QUERIES="24", ADAPATH_BENCH_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "fake_cupy"), str(ROOT)]),
               SUITE_FINETUNE_DEVICE="cpu", SUITE_REASONER_STEPS="2", SUITE_PATHMIND_SETTINGS="before,after",
               SUITE_PATHMIND_MODELS="paper",
               SUITE_SECONDS="600")  # 2 shared CPU cores run the benches slower than the GPU machine (--cap-factor)
    if fine_tuning:
        from tests.tiny_lm import make_tiny_lm

        env["SUITE_REASONER_BASE"] = str(make_tiny_lm(tmp_path / "tiny"))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "adapath.cli", "bench", "suite", str(ROOT / "bench" / "gpu.suite"),
                           "--result-dir", str(out), "--cap-factor", "4"], env=env, capture_output=True, text=True, timeout=660, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    table = (out / "suite.txt").read_text()
    assert (out / "environment.txt").read_text().startswith("commit: ")

    def result(name):
        line = next(line for line in table.splitlines() if line.startswith(name + " "))
        assert " ok, " in line, table
        return json.loads((out / line.split()[-1]).read_text())["figures"]

    rows = {r["part"]: r for r in result("gpu")["rows"]}
    assert rows["bank build on the GPU"]["status"] == "ok"
    assert "paths of the first 24 queries identical to the CPU build's" in rows["bank build on the GPU"]["detail"]
    bench = result("bank")
    assert {g["path_agreement_vs_cpu_exact"] for g in bench["gpu"].values()} == {1.0}
    assert set(bench["gpu"]["exact"]["device_ms"]) == {"upload", "solve", "rank", "copy"}
    assert bench["pair_stage_scaling"]["1"] == 1.0 and bench["gpu"]["exact"]["batch"] == 32
    pathmind = result("pathmind-speed")
    assert [(r["setting"], r["device"]) for r in pathmind] == [("before", "cpu"), ("after", "cpu")]
    assert pathmind[0]["answers"] == pathmind[1]["answers"]
    if fine_tuning:  # without trl and peft the bench fails, reported, and the suite goes on
        reasoner = result("reasoner")
        assert (reasoner["device"], reasoner["steps"], reasoner["rows"]) == ("cpu", 2, 8)
        assert len(reasoner["losses"]) == 2
