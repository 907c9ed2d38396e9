"""Graph generation, PrimeKG kg.csv writing and import, loading: seconds and peak memory, each
stage in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

from adapath.bench.inputs import parser, workdir
from adapath.bench.result import report
from adapath.engine.schema import PRIMEKG_RELATIONS

LOAD = "from adapath.engine.graph import KnowledgeGraph\n"
STAGES = {  # each a child process's code
    "generate": "from adapath.sources.synthetic import generate\n"
                "generate(scale={scale}, seed=0).save(r'{work}/synth', overwrite=True)",
    "write kg.csv": LOAD + "from adapath.bench.kg import write_primekg_csv\n"
                           "write_primekg_csv(KnowledgeGraph.load(r'{work}/synth'), r'{work}/kg.csv')",
    "import kg.csv": "from adapath.sources.primekg import load_primekg\n"
                     "load_primekg(r'{work}/kg.csv').save(r'{work}/imported', overwrite=True)",
    "load (mmap)": LOAD + "g = KnowledgeGraph.load(r'{work}/imported'); g.neighbors(0)",
}


def write_primekg_csv(graph, path, chunk=1_000_000):
    """Write ``graph`` as PrimeKG's kg.csv: both directions of every edge, 12 columns."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from adapath.sources.primekg import PRIMEKG_COLUMNS

    fine = {(r.display, *ends): r.relation for r in PRIMEKG_RELATIONS
            for ends in ((r.x_type, r.y_type), (r.y_type, r.x_type))}
    types, display_names = np.array(graph.type_names, dtype=object), np.array(graph.relation_names, dtype=object)
    with pacsv.CSVWriter(path, pa.schema([(c, pa.string()) if "index" not in c else (c, pa.int64())
                                          for c in PRIMEKG_COLUMNS])) as writer:
        for lo in range(0, graph.num_half_edges, chunk):
            hi = min(lo + chunk, graph.num_half_edges)
            x, y, display = graph.src[lo:hi], graph.indices[lo:hi], display_names[graph.rel[lo:hi]]
            xt, yt = types[graph.node_type[x]], types[graph.node_type[y]]
            relation = [fine.get((d, a, b), d) for d, a, b in zip(display, xt, yt)]
            xid, yid = graph.node_id[x], graph.node_id[y]
            table = pa.table({
                "relation": relation, "display_relation": display.tolist(),
                "x_index": xid, "x_id": xid.astype(str).tolist(), "x_type": xt.tolist(),
                "x_name": graph.names.take(pa.array(x)), "x_source": ["SYNTH"] * (hi - lo),
                "y_index": yid, "y_id": yid.astype(str).tolist(), "y_type": yt.tolist(),
                "y_name": graph.names.take(pa.array(y)), "y_source": ["SYNTH"] * (hi - lo),
            })
            writer.write_table(table)


def run_stage(code: str) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of ``code`` run in a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code])
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"stage failed with status {status}")
    return seconds, usage.ru_maxrss / 1024


def arguments():
    return parser(__doc__, scale=1.0, workdir=None)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    work, rows = workdir(args.workdir, "bench_kg_"), []
    for stage, template in STAGES.items():
        seconds, rss = run_stage(template.format(scale=args.scale, work=work))
        extra = ""
        if stage == "write kg.csv":
            with open(work / "kg.csv", "rb") as handle:
                lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))
            extra = f"{lines - 1:,} rows, {(work / 'kg.csv').stat().st_size / 2**20:,.0f} MiB"
        rows.append({"stage": stage, "seconds": round(seconds, 2), "peak_rss_mib": round(rss), "note": extra})
    report(args, {"scale": args.scale, "stages": rows}, f"bench kg at scale {args.scale} (work dir {work})")
