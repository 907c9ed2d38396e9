"""Knowledge-graph benchmark: generation and PrimeKG kg.csv import at a given scale.

Each stage runs in its own process so its wall time and peak resident memory are its own.
The kg.csv is written from a generated graph in PrimeKG's exact format (12 columns, every
relationship in both directions), so at scale 1.0 it has PrimeKG's 8.1 M rows.

    adapath bench kg [--scale 1.0] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

STAGES = {
    "generate": (
        "from adapath.sources.synthetic import generate\n"
        "generate(scale={scale}, seed=0).save(r'{work}/synth', overwrite=True)\n"
    ),
    "write kg.csv": (
        "from adapath.bench.kg import write_primekg_csv\n"
        "from adapath.engine.graph import KnowledgeGraph\n"
        "write_primekg_csv(KnowledgeGraph.load(r'{work}/synth'), r'{work}/kg.csv')\n"
    ),
    "import kg.csv": (
        "from adapath.sources.primekg import load_primekg\n"
        "load_primekg(r'{work}/kg.csv').save(r'{work}/imported', overwrite=True)\n"
    ),
    "load (mmap)": (
        "from adapath.engine.graph import KnowledgeGraph\n"
        "g = KnowledgeGraph.load(r'{work}/imported'); g.neighbors(0)\n"
    ),
}


def write_primekg_csv(graph, path, chunk=1_000_000):
    """Write ``graph`` as PrimeKG's kg.csv: both directions of every edge, 12 columns."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from adapath.engine.schema import PRIMEKG_RELATIONS

    fine = {}
    for r in PRIMEKG_RELATIONS:
        fine[(r.display, r.x_type, r.y_type)] = fine[(r.display, r.y_type, r.x_type)] = r.relation
    types = np.array(graph.type_names, dtype=object)
    src = graph.src
    names = graph.names
    with pacsv.CSVWriter(path, pa.schema([(c, pa.string()) if "index" not in c else (c, pa.int64())
                                          for c in _columns()])) as writer:
        for lo in range(0, graph.num_half_edges, chunk):
            hi = min(lo + chunk, graph.num_half_edges)
            x, y = src[lo:hi], graph.indices[lo:hi]
            rel = graph.rel[lo:hi]
            xt, yt = types[graph.node_type[x]], types[graph.node_type[y]]
            display = np.array(graph.relation_names, dtype=object)[rel]
            relation = [fine.get((d, a, b), d) for d, a, b in zip(display, xt, yt)]
            xid, yid = graph.node_id[x], graph.node_id[y]
            table = pa.table({
                "relation": relation, "display_relation": display.tolist(),
                "x_index": xid, "x_id": xid.astype(str).tolist(), "x_type": xt.tolist(),
                "x_name": names.take(pa.array(x)), "x_source": ["SYNTH"] * (hi - lo),
                "y_index": yid, "y_id": yid.astype(str).tolist(), "y_type": yt.tolist(),
                "y_name": names.take(pa.array(y)), "y_source": ["SYNTH"] * (hi - lo),
            })
            writer.write_table(table)


def _columns():
    from adapath.sources.primekg import PRIMEKG_COLUMNS

    return PRIMEKG_COLUMNS


def run_stage(code: str) -> tuple[float, float]:
    """Run code in a child process; return (seconds, peak RSS in MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code])
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"stage failed with status {status}")
    return seconds, usage.ru_maxrss / 1024


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="generated graph scale (1.0 = PrimeKG's size)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the stages write (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_kg_"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for stage, template in STAGES.items():
        seconds, rss = run_stage(template.format(scale=args.scale, work=work))
        extra = ""
        if stage == "write kg.csv":
            size = (work / "kg.csv").stat().st_size
            with open(work / "kg.csv", "rb") as handle:
                lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))
            extra = f"{lines - 1:,} rows, {size / 2**20:,.0f} MiB"
        rows.append({"stage": stage, "seconds": round(seconds, 2), "peak_rss_mib": round(rss), "note": extra})
    print(f"bench_kg at scale {args.scale} (work dir {work})")
    print(f"{'stage':<16}{'seconds':>10}{'peak RSS MiB':>15}  note")
    for row in rows:
        print(f"{row['stage']:<16}{row['seconds']:>10.2f}{row['peak_rss_mib']:>15,}  {row['note']}")
    if args.json:
        args.json.write_text(json.dumps({"scale": args.scale, "stages": rows}, indent=2))

