"""The result viewer's page size, writing time and load times in headless Chromium, at each
number of questions; ``--page P --screenshot PNG`` only takes a screenshot of a page."""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from adapath.bench.inputs import inputs, parser
from adapath.bench.result import report
from adapath.bench.timing import timed
from adapath.contract import Result
from adapath.datasets.biostrat import LEVELS, gold_metapath, records_query_set


def fake_results(graph, records, seed: int) -> dict[str, list[dict]]:
    """Two methods' results: the gold path among random walks of the same length."""
    rng = np.random.default_rng(seed)
    runs = {"adapath": [], "baseline": []}
    for method, skill in (("adapath", 0.6), ("baseline", 0.35)):
        for record in records:
            hops = int(record["num_hops"])
            gold = [int(v) for v in record["path_node_ids"]][: hops + 1]
            gold_index = graph.index_of(gold)
            for level in LEVELS:
                paths = [[[gold[k], record["triplets"][k][1], gold[k + 1]] for k in range(hops)]]
                explored = {str(d): set() for d in range(1, hops + 1)}
                for _ in range(4):
                    walk, steps = [int(gold_index[0])], []
                    for _ in range(hops):
                        nbrs, rels = graph.neighbors(walk[-1])
                        if len(nbrs) == 0:
                            break
                        pick = int(rng.integers(len(nbrs)))
                        steps.append([int(graph.node_id[walk[-1]]), graph.relation_names[int(rels[pick])],
                                      int(graph.node_id[nbrs[pick]])])
                        walk.append(int(nbrs[pick]))
                    if steps:
                        paths.append(steps)
                    for d, v in enumerate(walk[1:], start=1):
                        explored[str(d)].add(int(graph.node_id[v]))
                explored = {d: sorted(v | {gold[int(d)]}) for d, v in explored.items()}
                answer = (record["answer_entity"]["name"] if rng.random() < skill
                          else graph.name(int(rng.integers(graph.num_nodes))))
                runs[method].append(Result.from_json({
                    "id": str(record["data_id"]), "level": level, "answer": answer, "raw": "",
                    "paths": paths, "explored": explored,
                    "metapaths": [{"metapath": gold_metapath(record), "score": 1.0}],
                    "usage": {"calls": 2, "prompt_tokens": 900, "completion_tokens": 12, "seconds": 0.8},
                }))
    return runs


TIMING_JS = """(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const clickRow = () => { const rows = document.querySelectorAll('.row'); rows[Math.min(5, rows.length - 1)].click(); };
  let t = performance.now(); clickRow(); const detail = performance.now() - t;
  const level = document.getElementById('f-level');
  t = performance.now(); level.value = 'implicit'; level.dispatchEvent(new Event('change'));
  const filter = performance.now() - t;
  level.value = ''; level.dispatchEvent(new Event('change'));
  const q = document.getElementById('f-q');
  t = performance.now(); q.value = 'which'; q.dispatchEvent(new Event('input'));
  const search = performance.now() - t;
  return {file: nav.responseEnd, dcl: nav.domContentLoadedEventEnd, parse: VIEW.timings.parse,
          ready: window.viewReadyAt, detail, filter, search,
          rows: Number(document.getElementById('count').dataset.count)};
})()"""


def bench(sizes: list[int], rounds: int, scale: float, seed: int) -> list[dict]:
    from adapath.view import write_question_page
    from adapath.view.headless import Browser

    graph, _ = inputs().graph(scale, seed)
    records = inputs().questions(graph, max(sizes), seed=seed + 1)
    runs = fake_results(graph, records, seed + 2)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Browser(width=1400, height=900) as browser:
        for n in sizes:
            ids = {str(r["data_id"]) for r in records[:n]}
            subset = {m: [x for x in lines if x.id in ids] for m, lines in runs.items()}
            out = Path(tmp) / f"view-{n}.html"
            questions = records_query_set(records[:n]).items
            write_s = timed(write_question_page, subset, questions, graph, out)[0]
            samples = []
            for _ in range(rounds):
                browser.open(out.as_uri())
                samples.append(browser.evaluate(TIMING_JS))
            if browser.errors():
                sys.exit(f"page errors: {browser.errors()}")
            med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
            rows.append({"questions": n, "answers": sum(len(v) for v in subset.values()),
                         "html_mb": out.stat().st_size / 1e6, "write_s": write_s,
                         **{f"{k}_ms": v for k, v in med.items()}})
    return rows


def screenshot(page: Path, out: Path, select: str | None, width: int, height: int) -> None:
    from adapath.view.headless import Browser

    with Browser(width=width, height=height) as browser:
        url = page.resolve().as_uri() + (f"#sel={select.replace('|', '%7C')}" if select else "")
        browser.open(url)
        if browser.errors() or browser.requests() != [page.resolve().as_uri()]:
            sys.exit(f"page errors {browser.errors()} or requests {browser.requests()}")
        browser.screenshot(out)
    # 256 colours lose nothing visible on a page of flat colours and take a third of the bytes
    from PIL import Image  # Pillow comes with matplotlib

    Image.open(out).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT,
                                            dither=Image.Dither.NONE).save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} kB)")


def arguments():
    return parser(__doc__, {
        "sizes": ("300,1000,3000", "question counts, comma-separated"),
        "page": (None, "screenshot this page instead of benchmarking", Path),
        "screenshot": (None, "PNG to write (with --page)", Path),
        "select": (None, "ID|LEVEL of the question to show (with --page)"),
        "size": ("1400x900", "viewport WIDTHxHEIGHT (with --page)"),
    }, scale=0.05, seed=0, rounds=3)


def main(argv: list[str] | None = None) -> None:
    cli = arguments()
    args = cli.parse_args(argv)
    if args.page:
        if not args.screenshot:
            cli.error("--page needs --screenshot")
        width, height = (int(v) for v in args.size.split("x"))
        screenshot(args.page, args.screenshot, args.select, width, height)
        rows = [{"screenshot": str(args.screenshot)}]
    else:
        rows = bench([int(s) for s in args.sizes.split(",")], args.rounds, args.scale, args.seed)
    report(args, rows, f"the viewer in headless Chromium, scale {args.scale}, median of {args.rounds} loads")

