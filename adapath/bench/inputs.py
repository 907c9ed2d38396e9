"""The inputs a bench names (a generated graph, its questions, a Path-Bank, a split of real
records), built once under one cache folder (``ADAPATH_BENCH_CACHE``, else
``~/.cache/adapath/bench``) in a folder named by the blake2b of the request (a graph by its
checksum, a file by its bytes' digest): a second bench asking for the same one reuses it."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from collections import Counter
from pathlib import Path

from adapath.datasets.specs import source_checksum

ENV = "ADAPATH_BENCH_CACHE"
# the options benches spell alike: (type, help)
COMMON = {"scale": (float, "generated graph scale (1.0 = PrimeKG's size)"), "seed": (int, "graph seed"),
          "rounds": (int, "timed rounds (sides alternating)"), "records_file": (Path, "BioStrat-QA JSONL (dev records)"),
          "workdir": (Path, "work folder (default: a temporary one; inputs come from the bench cache)")}


def parser(doc: str, **defaults) -> argparse.ArgumentParser:
    """A bench's parser: its docstring's first line, the common options it names (with their
    defaults) and ``--json`` (where the runner takes the figures)."""
    out = argparse.ArgumentParser(description=" ".join(doc.strip().split("\n\n")[0].split()))
    for name, default in defaults.items():
        kind, text = COMMON[name]
        out.add_argument("--" + name.replace("_", "-"), type=kind, default=default, help=text)
    out.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    return out


def workdir(path: Path | None, prefix: str) -> Path:
    work = path or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    return work


def cache_root() -> Path:
    from adapath.retrieval.cache_dir import user_cache_root

    return Path(os.environ.get(ENV) or user_cache_root() / "bench")


def key_of(request: dict) -> str:
    text = json.dumps(request, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class Inputs:
    """Builds or reuses the inputs under ``root``; ``built`` counts what this instance built
    (by kind) and ``used`` lists every input's folder name, for the result's record."""

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

    def graph(self, scale: float, seed: int = 0, evidence: list[str | Path] = ()) -> tuple:
        """(graph, its folder) of ``generate(scale, seed, evidence)``, generated once."""
        from adapath.engine.graph import KnowledgeGraph
        from adapath.sources.synthetic import generate

        evidence = [Path(p) for p in evidence]
        folder = self._place("graph", {"scale": float(scale), "seed": seed,
                                       "evidence": [source_checksum(p) for p in evidence]})
        if not (folder / "graph.npz").is_file():
            generate(scale=scale, seed=seed, evidence=evidence).save(folder, overwrite=True)
            self.built["graph"] += 1
        return KnowledgeGraph.load(folder, mmap=False), folder

    def questions(self, graph, count: int, seed: int, first_id: int = 0) -> list[dict]:
        """``count`` questions generated on ``graph`` with ``seed`` (records, as JSON)."""
        from adapath.datasets.generate import QueryGenerator
        from adapath.fsutil import atomic_file

        path = self._place("questions", {"graph": graph.checksum(), "count": count, "seed": seed,
                                         "first_id": first_id}, ".jsonl")
        if not path.is_file():
            records = QueryGenerator(graph).generate(count, seed=seed, first_id=first_id)
            with atomic_file(path) as handle:
                handle.writelines(json.dumps(r) + "\n" for r in records)
            self.built["questions"] += 1
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]

    def bank(self, graph, graph_dir: Path, records: list[dict], config=None) -> Path:
        """The Path-Bank of ``records`` (training questions) on ``graph`` with ``config``."""
        import dataclasses

        from adapath.bank.build import BankConfig, build_bank
        from adapath.datasets.biostrat import training_queries

        config = config or BankConfig()
        questions = hashlib.blake2b(json.dumps(records, sort_keys=True).encode(), digest_size=16).hexdigest()
        folder = self._place("bank", {"graph": graph.checksum(), "questions": questions,
                                      "config": dataclasses.asdict(config)})
        if not (folder / "paths.parquet").is_file():
            build_bank(graph, training_queries(records), folder, config, graph_dir=graph_dir)
            self.built["bank"] += 1
        return folder

    def split(self, records_path: str | Path, split: str = "test") -> tuple[list[dict], list[dict]]:
        """(bank half, test half) of real records, as ``bench real-records`` splits them; the
        key (the file's digest and the split) is recorded."""
        from adapath.bench.real_records import split_records
        from adapath.datasets.biostrat import load_records

        self._place("split", {"records": source_checksum(records_path), "split": split})
        return split_records(load_records(records_path), split)


_shared: dict[Path, Inputs] = {}


def inputs() -> Inputs:
    """The process's Inputs for the current cache folder (one per folder)."""
    root = cache_root()
    return _shared.setdefault(root, Inputs(root))
