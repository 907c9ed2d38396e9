"""CPU routes of the MiniLM node encoder (torch, int8, ONNX Runtime, OpenVINO, float16 storage):
texts/s of real node texts and agreement with torch float32's rankings against real questions."""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path

import numpy as np

from adapath.bench.inputs import DEFAULT_RECORDS, parser
from adapath.bench.result import report
from adapath.bench.timing import alternate
from adapath.datasets.biostrat import load_records


def real_texts(records: Path, n_texts: int, n_queries: int) -> tuple[list[str], list[str]]:
    nodes, queries = {}, []
    for record in load_records(records):
        queries.append(record["explicit_query"])
        for meta in record["node_metadata"]:
            nodes.setdefault(meta["id"], f"{meta['name']} {(meta.get('description') or '')[:300]}".strip())
    ids = sorted(nodes)
    rng = np.random.default_rng(0)
    picked = rng.choice(len(ids), size=min(n_texts, len(ids)), replace=False)
    chosen = rng.choice(len(queries), size=min(n_queries, len(queries)), replace=False)
    return [nodes[ids[i]] for i in sorted(picked)], [queries[i] for i in sorted(chosen)]


def timed(encode, texts: list[str], rounds: int = 2) -> tuple[np.ndarray, float]:
    """(vectors, texts/s of the best round), after a warm-up call (allocation, graph optimisation)."""
    done = alternate({"route": lambda: encode(texts)}, rounds, warm={"route": lambda: encode(texts[:16])})
    return np.asarray(done.best_value("route"), dtype=np.float32), len(texts) / done.best("route")


def agreement(ref_scores: np.ndarray, scores: np.ndarray, k: int = 10) -> tuple[float, float]:
    """The means over questions of the top-``k`` overlap and of Spearman's rho of the rankings."""
    tops = [np.argsort(-x, axis=1)[:, :k] for x in (ref_scores, scores)]
    overlap = np.mean([len(set(a) & set(b)) / k for a, b in zip(*tops)])
    ra, rb = (np.argsort(np.argsort(x, axis=1), axis=1).astype(np.float64) for x in (ref_scores, scores))
    ra, rb = ra - ra.mean(axis=1, keepdims=True), rb - rb.mean(axis=1, keepdims=True)
    return float(overlap), float(((ra * rb).sum(axis=1) / np.sqrt((ra ** 2).sum(axis=1) * (rb ** 2).sum(axis=1))).mean())


def onnx_routes(model, batch: int, workdir: Path):
    """The transformer exported to ONNX (float32, dynamic int8), each with mean pooling."""
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    transformer = model[0]
    auto_model, tokenizer = transformer.model, transformer.tokenizer
    sample = tokenizer(["a sample text", "another one"], padding=True, return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]
    fp32 = workdir / "model.onnx"

    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(**dict(zip(names, args))).last_hidden_state

    torch.onnx.export(Wrapped(auto_model).eval(), tuple(sample[n] for n in names), str(fp32),
                      input_names=names, output_names=["hidden"], opset_version=17, dynamo=False,
                      dynamic_axes={**{n: {0: "batch", 1: "seq"} for n in names},
                                    "hidden": {0: "batch", 1: "seq"}})
    int8 = workdir / "model-int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    max_len = transformer.max_seq_length
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()

    def make(path, runtime="onnxruntime"):
        if runtime == "openvino":
            import openvino

            run = openvino.Core().compile_model(str(path), "CPU")
        else:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            run = functools.partial(session.run, None)

        def encode(texts):
            out = []
            order = np.argsort([-len(t) for t in texts])
            for lo in range(0, len(texts), batch):
                part = [texts[i] for i in order[lo:lo + batch]]
                tok = tokenizer(part, padding=True, truncation=True, max_length=max_len, return_tensors="np")
                hidden = run({n: tok[n].astype(np.int64) for n in names})[0]
                mask = tok["attention_mask"][..., None].astype(np.float32)
                pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
                out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
            vectors = np.concatenate(out)
            result = np.empty_like(vectors)
            result[order] = vectors
            return result
        return encode

    routes = {"onnxruntime float32": make(fp32), "onnxruntime int8 (dynamic)": make(int8)}
    with contextlib.suppress(ImportError):
        routes["openvino float32 (from the ONNX)"] = make(fp32, "openvino")
    return routes


def arguments():
    return parser(__doc__, {
        "records": (DEFAULT_RECORDS, "BioStrat-QA JSONL (dev records)."),
        "texts": (600, "Real node texts to encode and rank."),
        "queries": (100, "Real questions ranking the texts."),
        "batch": (64, "Encoder batch size.")})


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from sentence_transformers import SentenceTransformer

    from adapath.retrieval.dense import minilm_path

    texts, queries = real_texts(args.records, args.texts, args.queries)
    model = SentenceTransformer(minilm_path(), device="cpu")

    def st_encode(m):
        return lambda t: m.encode(t, batch_size=args.batch, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)

    ref, ref_rate = timed(st_encode(model), texts)
    query_vectors = st_encode(model)(queries)
    ref_scores, table = query_vectors @ ref.T, []

    def add(name, encode, route_queries=None, vectors=None, rate=None):
        if vectors is None:
            vectors, rate = timed(encode, texts)
        route_queries = np.asarray(encode(queries) if route_queries is None else route_queries, dtype=np.float32)
        overlap, rho = agreement(ref_scores, route_queries @ vectors.T)
        table.append({"route": name, "texts_per_s": rate, "top10_overlap": overlap, "spearman": rho,
                      "min_cosine_to_reference": float(np.min(np.sum(ref * vectors, axis=1)))})

    add("torch float32 (reference)", None, query_vectors, ref, ref_rate)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    add("torch float32, 1 thread", st_encode(model), query_vectors)
    torch.set_num_threads(threads)
    quantized = SentenceTransformer(minilm_path(), device="cpu")
    quantized[0].model = torch.ao.quantization.quantize_dynamic(quantized[0].model, {torch.nn.Linear},
                                                               dtype=torch.qint8)
    add("torch int8 (quantize_dynamic)", st_encode(quantized))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, encode in onnx_routes(model, args.batch, Path(tmp)).items():
                add(name, encode)
    except ImportError as exc:
        table.append({"route": "onnxruntime", "note": f"skipped: {exc.name or exc} not installed"})
    add("torch float32 stored as float16", None, query_vectors, ref.astype(np.float16).astype(np.float32), ref_rate)
    report(args, table, f"bench encoder: all-MiniLM-L6-v2, {len(texts)} real node texts, {len(queries)} real "
                        f"questions, batch {args.batch}, {torch.get_num_threads()} threads")
