"""Batch Path-Bank construction: resumable, streaming to Parquet (AdaPath §3.1).

For every training query: text similarity -> Eq. 1 weights -> bidirectional PPR ->
corridor -> Yen's k-shortest paths (Eq. 5 costs) -> paths binned by hop, n per hop.

Layout of a bank directory:

- ``queries.parquet``: id, text per level, topic and answer ids and types, hops, template;
- ``parts/part-NNNNNN.parquet``: the paths of one batch, written atomically; its Parquet
  metadata lists the queries the batch finished (queries without a path included);
- ``paths.parquet``: all parts merged, in query order (written when every query is done);
- ``manifest.json``: parameters, package version, graph checksum, progress, stage seconds.

A rerun after a crash (SIGKILL included) reads the finished parts, skips their queries and
never duplicates or tears rows: a part exists whole or not at all. Per-query results do not
depend on batch composition (PPR columns are independent), so a resumed bank equals an
uninterrupted one.

Records with two topics give two pairs, as in the AdaPath reference: the *chain* pair joins
the two ends of the record's path (topic to topic through the answer) and the *direct* pair
joins the first topic and the answer.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import adapath
from adapath.engine.corridor import LADDER, CorridorBuilder
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.paths import ALPHA, bin_by_hop, corridor_graph, hop_bounded, k_shortest
from adapath.engine.ppr import ETA, TOL, PPREngine
from adapath.engine.weights import BETA, EPS, query_weights
from adapath.errors import InputError
from adapath.retrieval.bm25 import GraphText

STAGES = ("text", "weights", "ppr", "corridor", "paths")

PATH_SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("pair", pa.string()),
    ("topic_id", pa.int64()),
    ("answer_id", pa.int64()),
    ("hop", pa.int32()),
    ("rank", pa.int32()),
    ("cost", pa.float64()),
    ("node_ids", pa.list_(pa.int64())),
    ("relations", pa.list_(pa.string())),
    ("node_types", pa.list_(pa.string())),
    ("metapath", pa.string()),
    ("corridor_k", pa.int32()),
    ("fallback", pa.string()),
])


@dataclass
class BankConfig:
    level: str = "explicit"
    beta: float = BETA
    eps: float = EPS
    eta: float = ETA
    tol: float = TOL
    ladder: tuple[int, ...] = LADDER
    alpha: float = ALPHA
    per_hop: int = 5
    max_hop: int = 5
    k_paths: int = 60  # Yen's pool before binning by hop
    search: str = "yen"  # or "hop-bounded": the best paths of each exact hop count
    bm25_k1: float = 1.5
    bm25_b: float = 0.0  # length-agnostic, as the AdaPath reference
    batch: int = 32
    device: str = "cpu"

    def signature(self) -> dict:
        """The parameters that change results (batch size and device do not)."""
        d = asdict(self)
        d.pop("batch")
        d.pop("device")
        d["ladder"] = list(self.ladder)
        return d


@dataclass
class Pair:
    query_id: str
    order: int
    kind: str  # "direct" or "chain"
    topic: int  # internal index
    answer: int
    text: str


@dataclass
class Progress:
    total: int
    done: int
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))


def topic_ids(record: dict) -> list[int]:
    """A record's topic ids, first topic first (by position on the record's path)."""
    ids = [int(k) for k in record["topic_entities"]]
    path = [int(v) for v in record["path_node_ids"]]
    return sorted(ids, key=lambda i: path.index(i) if i in path else len(path))


def record_pairs(graph: KnowledgeGraph, records: list[dict], level: str,
                 orders: list[int] | None = None) -> list[list[Pair]]:
    """The (topic, answer) pairs of each record, as internal indices. ``orders`` gives each
    record's place in the full query file (default: its place in ``records``)."""
    out = []
    for order, record in zip(orders if orders is not None else range(len(records)), records):
        qid = str(record["data_id"])
        text = record[f"{level}_query"]
        answer_ext = int(record["answer_entity"]["id"])
        topics_ext = topic_ids(record)
        index = graph.index_of([answer_ext, *topics_ext], missing="ignore")
        if np.any(index < 0):
            raise InputError(f"query {qid}: topic or answer id not in the graph")
        answer, topics = int(index[0]), [int(i) for i in index[1:]]
        pairs = [Pair(qid, order, "direct", topics[0], answer, text)]
        if len(topics) > 1:
            path = graph.index_of([int(v) for v in record["path_node_ids"]], missing="ignore")
            if np.all(path >= 0) and path[0] != path[-1]:
                pairs.insert(0, Pair(qid, order, "chain", int(path[0]), int(path[-1]), text))
        out.append(pairs)
    return out


def queries_table(records: list[dict]) -> pa.Table:
    rows = {k: [] for k in ("id", "explicit", "implicit", "bare", "topic_id", "topic_type",
                            "answer_id", "answer_type", "hops", "template_id")}
    for r in records:
        meta = {int(m["id"]): m for m in r["node_metadata"]}
        topic = topic_ids(r)[0]
        rows["id"].append(str(r["data_id"]))
        for level in ("explicit", "implicit", "bare"):
            rows[level].append(r[f"{level}_query"])
        rows["topic_id"].append(topic)
        rows["topic_type"].append(meta.get(topic, {}).get("type", ""))
        rows["answer_id"].append(int(r["answer_entity"]["id"]))
        rows["answer_type"].append(r["answer_entity"].get("type", ""))
        rows["hops"].append(int(r["num_hops"]))
        rows["template_id"].append(str(r.get("template_id", "")))
    return pa.table(rows)


class PathBankBuilder:
    def __init__(self, graph: KnowledgeGraph, config: BankConfig, graph_dir: str | Path | None = None,
                 workers: int = 1):
        """``workers`` threads run the per-pair corridor and path search (their kernels
        release the GIL); results do not depend on it."""
        self.graph, self.config, self.workers = graph, config, max(1, workers)
        self.text = GraphText.for_graph(graph, graph_dir, k1=config.bm25_k1, b=config.bm25_b)
        self.ppr = PPREngine(graph, device=config.device, eta=config.eta, tol=config.tol)
        self._local = threading.local()

    # ---------------------------------------------------------------- one batch
    def run_batch(self, pairs: list[Pair], seconds: dict[str, float]) -> list[dict]:
        """Paths of a batch of pairs, as row dicts; adds stage times to ``seconds``."""
        c = self.config
        clock = time.perf_counter()
        texts = sorted({p.text for p in pairs})
        column = {t: i for i, t in enumerate(texts)}
        s_node, s_rel = self.text.similarity(texts)
        seconds["text"] += time.perf_counter() - clock

        clock = time.perf_counter()
        weights = query_weights(s_node, s_rel, beta=c.beta, eps=c.eps)  # one column per text
        cols = np.array([column[p.text] for p in pairs])
        seconds["weights"] += time.perf_counter() - clock

        clock = time.perf_counter()
        result = self.ppr.bidirectional(weights, [p.topic for p in pairs], [p.answer for p in pairs], cols)
        seconds["ppr"] += time.perf_counter() - clock

        def one(j: int) -> tuple[list[dict], float, float]:
            return self._pair_rows(pairs[j], weights.a[:, cols[j]], weights.b[:, cols[j]],
                                   result.forward[:, j] * result.backward[:, j])

        if self.workers > 1 and len(pairs) > 1:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                outputs = list(pool.map(one, range(len(pairs))))
        else:
            outputs = [one(j) for j in range(len(pairs))]
        rows = []
        for pair_rows, corridor_s, paths_s in outputs:
            rows += pair_rows
            seconds["corridor"] += corridor_s
            seconds["paths"] += paths_s
        return rows

    def _corridor_builder(self) -> CorridorBuilder:
        """One builder per thread: a builder keeps a scratch array."""
        builder = getattr(self._local, "corridors", None)
        if builder is None:
            builder = self._local.corridors = CorridorBuilder(self.graph, self.config.ladder, self.config.max_hop)
        return builder

    def _pair_rows(self, pair: Pair, a: np.ndarray, b: np.ndarray, rho: np.ndarray):
        """Corridor, path search and rows of one pair; its corridor and path seconds."""
        g, c = self.graph, self.config
        corridors = self._corridor_builder()
        clock = time.perf_counter()
        corridor = corridors.build(rho, pair.topic, pair.answer)
        local = corridor_graph(g, corridors, corridor, a, b, rho, c.alpha)
        corridor_s = time.perf_counter() - clock
        clock = time.perf_counter()
        if corridor.fallback == "unreachable":
            found = []
        elif c.search == "hop-bounded":
            found = hop_bounded(local, pair.topic, pair.answer, c.max_hop, c.per_hop, g)
        else:
            found = k_shortest(local, pair.topic, pair.answer, c.k_paths)
        rows = []
        for hop, paths in bin_by_hop(g, found, c.per_hop, c.max_hop).items():
            for rank, path in enumerate(paths):
                mp = path.metapath(g)
                rows.append({
                    "query_id": pair.query_id, "pair": pair.kind,
                    "topic_id": int(g.node_id[pair.topic]), "answer_id": int(g.node_id[pair.answer]),
                    "hop": hop, "rank": rank, "cost": float(path.cost),
                    "node_ids": g.node_id[path.nodes].tolist(),
                    "relations": list(mp.relations), "node_types": list(mp.types),
                    "metapath": str(mp), "corridor_k": corridor.k, "fallback": corridor.fallback,
                    "_order": pair.order,
                })
        return rows, corridor_s, time.perf_counter() - clock

    # ---------------------------------------------------------------- the whole bank
    def build(self, records: list[dict], out: str | Path, on_progress: Callable[[Progress], None] | None = None,
              graph_checksum: str | None = None) -> Progress:
        out = Path(out)
        c = self.config
        checksum = graph_checksum or self.graph.checksum()
        manifest_path = out / "manifest.json"
        parts_dir = out / "parts"
        ids = [str(r["data_id"]) for r in records]
        if len(set(ids)) != len(ids):
            raise InputError("query ids (data_id) are not unique")
        old = json.loads(manifest_path.read_text()) if manifest_path.is_file() else None
        if old is not None:
            if old.get("parameters") != c.signature() or old.get("graph_checksum") != checksum \
                    or old.get("query_ids_checksum") != _ids_checksum(ids):
                raise InputError(f"{out}: a bank built with other parameters, graph or queries "
                                 "is there; choose a new --out or pass --force")
        parts_dir.mkdir(parents=True, exist_ok=True)
        for stray in parts_dir.glob(".*.tmp"):
            stray.unlink()
        _write_atomic_table(queries_table(records), out / "queries.parquet")
        done = finished_queries(parts_dir)
        progress = Progress(total=len(records), done=len(done & set(ids)))
        if old is not None:
            progress.seconds.update(old.get("stage_seconds", {}))
        todo = [i for i, qid in enumerate(ids) if qid not in done]
        # the merge sorts by each record's place in the query file
        all_pairs = record_pairs(self.graph, [records[i] for i in todo], c.level, orders=todo)
        order_of = {qid: i for i, qid in enumerate(ids)}
        next_part = _next_part_number(parts_dir)
        self._write_manifest(out, checksum, ids, progress, complete=False)
        for start in range(0, len(all_pairs), c.batch):
            chunk = all_pairs[start:start + c.batch]
            pairs = [p for group in chunk for p in group]
            rows = self.run_batch(pairs, progress.seconds)
            finished = [group[0].query_id for group in chunk]
            _write_part(rows, finished, parts_dir / f"part-{next_part:06d}.parquet")
            next_part += 1
            progress.done += len(finished)
            self._write_manifest(out, checksum, ids, progress, complete=False)
            if on_progress is not None:
                on_progress(progress)
        merge_parts(parts_dir, out / "paths.parquet", order_of)
        self._write_manifest(out, checksum, ids, progress, complete=True)
        return progress

    def _write_manifest(self, out: Path, checksum: str, ids: list[str], progress: Progress,
                        complete: bool) -> None:
        manifest = {
            "format": "adapath-pathbank",
            "version": adapath.__version__,
            "parameters": self.config.signature(),
            "device": self.config.device,
            "graph_checksum": checksum,
            "query_ids_checksum": _ids_checksum(ids),
            "queries_total": progress.total,
            "queries_done": progress.done,
            "complete": complete,
            "stage_seconds": {k: round(v, 4) for k, v in progress.seconds.items()},
        }
        tmp = out / ".manifest.json.tmp"
        tmp.write_text(json.dumps(manifest, indent=2))
        os.replace(tmp, out / "manifest.json")


def _ids_checksum(ids: list[str]) -> str:
    import hashlib

    return hashlib.blake2b("\n".join(ids).encode(), digest_size=12).hexdigest()


def _write_atomic_table(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _write_part(rows: list[dict], finished: list[str], path: Path) -> None:
    columns = {name: [r[name] for r in rows] for name in PATH_SCHEMA.names}
    table = pa.table(columns, schema=PATH_SCHEMA)
    table = table.append_column("order", pa.array([r["_order"] for r in rows], pa.int64()))
    meta = {b"adapath.finished_queries": json.dumps(finished).encode()}
    table = table.replace_schema_metadata(meta)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        pq.write_table(table, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _next_part_number(parts_dir: Path) -> int:
    numbers = [int(p.stem.split("-")[1]) for p in parts_dir.glob("part-*.parquet")]
    return max(numbers, default=-1) + 1


def finished_queries(parts_dir: Path) -> set[str]:
    done: set[str] = set()
    for part in sorted(parts_dir.glob("part-*.parquet")):
        meta = pq.read_schema(part).metadata or {}
        done.update(json.loads(meta.get(b"adapath.finished_queries", b"[]")))
    return done


def merge_parts(parts_dir: Path, out: Path, order_of: dict[str, int]) -> None:
    """All parts as one table in query order (then pair, hop, rank); written atomically."""
    tables = [pq.read_table(p) for p in sorted(parts_dir.glob("part-*.parquet"))]
    tables = [t.replace_schema_metadata(None) for t in tables]
    if tables:
        table = pa.concat_tables(tables)
        table = table.filter(pa.compute.is_in(table.column("query_id"), pa.array(list(order_of))))
        table = table.sort_by([("order", "ascending"), ("pair", "ascending"),
                               ("hop", "ascending"), ("rank", "ascending")])
        table = table.drop_columns(["order"])
    else:
        table = PATH_SCHEMA.empty_table()
    _write_atomic_table(table, out)


def bank_info(bank: str | Path) -> dict:
    """Paths per hop, meta-path frequencies, fallbacks and the corridor-K histogram."""
    bank = Path(bank)
    manifest_path = bank / "manifest.json"
    if not manifest_path.is_file():
        raise InputError(f"{bank}: not a Path-Bank (no manifest.json)")
    manifest = json.loads(manifest_path.read_text())
    paths_file = bank / "paths.parquet"
    if paths_file.is_file():
        table = pq.read_table(paths_file)
    else:
        parts = sorted((bank / "parts").glob("part-*.parquet"))
        table = pa.concat_tables([pq.read_table(p).drop_columns(["order"]).replace_schema_metadata(None)
                                  for p in parts]) if parts else PATH_SCHEMA.empty_table()
    d = table.select(["query_id", "pair", "hop", "metapath", "corridor_k", "fallback"]).to_pydict()
    from collections import Counter

    per_pair = {}
    for qid, pair, k, fb in zip(d["query_id"], d["pair"], d["corridor_k"], d["fallback"]):
        per_pair[(qid, pair)] = (k, fb)
    return {
        "queries_total": manifest["queries_total"],
        "queries_done": manifest["queries_done"],
        "complete": manifest["complete"],
        "paths": len(d["hop"]),
        "queries_with_paths": len({q for q in d["query_id"]}),
        "paths_per_hop": {str(h): c for h, c in sorted(Counter(d["hop"]).items())},
        "metapaths": dict(Counter(d["metapath"]).most_common(20)),
        "distinct_metapaths": len(set(d["metapath"])),
        "fallbacks": {k or "none": v for k, v in Counter(fb for _, fb in per_pair.values()).items()},
        "corridor_k": {str(k): v for k, v in sorted(Counter(k for k, _ in per_pair.values()).items())},
        "stage_seconds": manifest["stage_seconds"],
    }
