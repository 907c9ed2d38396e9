"""Each baseline against its original's control flow on one scripted query (stage sequence and
call count, worked by hand from the official code's loop), and the cost-accounting rules: a
request of n samples is one call, a reply without usage is marked estimated, failed attempts
are counted apart from calls."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from adapath.contract import Query
from adapath.engine.graph import KnowledgeGraph
from adapath.eval.tables import efficiency
from adapath.llm import GenerationParams, ScriptedBackend, Usage
from adapath.llm.base import count_tokens
from adapath.llm.openai_http import OpenAIHTTPBackend
from adapath.llm.serve import make_server
from adapath.methods.base import LLMCaller, MethodContext
from adapath.methods.registry import all_methods
from adapath.retrieval.dense import HashingEncoder


def hand_graph(edges):
    """Nodes in order of first mention; ids 100 + position; relations sorted by name."""
    names = list(dict.fromkeys(n for h, _, t in edges for n in (h, t)))
    relations = tuple(sorted({r for _, r, _ in edges}))
    return KnowledgeGraph.from_edges(
        np.array([names.index(h) for h, _, _ in edges]), np.array([names.index(t) for _, _, t in edges]),
        np.array([relations.index(r) for _, r, _ in edges]), node_type=np.zeros(len(names), dtype=np.int8),
        node_id=np.arange(100, 100 + len(names)), names=names, descriptions=[f"{n}." for n in names],
        type_names=("thing",), relation_names=relations, relation_descriptions=relations)


def build(name, graph, backend, **params):
    spec = all_methods()[name]
    context = MethodContext(graph, None, backend, "hashing", params=spec.resolve_params(
        {k: str(v) for k, v in params.items()}))
    context._encoder = HashingEncoder()
    return spec.make(context)


def stages(backend, marks):
    """The stage of every prompt sent, by the first mark (a phrase of that stage's prompt) it holds."""
    out = []
    for prompt in backend.seen:
        out.append(next((stage for stage, mark in marks if mark in prompt), "?"))
    return out


# A chain with a side branch at each step: topic -r1- a1 | b1, a1 -r2- a2 | b2, a2 -r3- a3
CHAIN = [("topic", "r1", "a1"), ("topic", "r1", "b1"), ("a1", "r2", "a2"), ("a1", "r2", "b2"),
         ("a2", "r3", "a3")]
QUESTION = "Which entity lies three steps from the topic?"


# ---------------------------------------------------------------- ToG
TOG_MARKS = (("relations", "Topic entity:"), ("entities", "Relation followed:"),
             ("sufficiency", "say whether the triplets"), ("answer", "answer the question with these triplets"),
             ("knowledge", "A: First,"))


def tog_backend(sufficient_with=None):
    def relations(prompt):  # the relation of the entity's own step forward, and one back
        listed = prompt.rsplit("Its relations: ", 1)[1].splitlines()[0].split("; ")
        return "\n".join(f"{{{r} (Score: {0.9 if i == len(listed) - 1 else 0.1})}}" for i, r in enumerate(listed))

    def sufficiency(prompt):
        shown = prompt.rsplit("Knowledge Triplets: ", 1)[1]
        return "{Yes}. So the answer is {a3}." if sufficient_with and sufficient_with in shown else "{No}. Not yet."

    return ScriptedBackend(rules={"Its relations:": relations, "Relation followed:": "0.7, 0.3",
                                  "say whether the triplets": sufficiency}, default="The answer is {a3}.")


def test_tog_follows_the_official_loop_within_2nd_plus_d_plus_1():
    g = hand_graph(CHAIN)
    q = Query("q", "explicit", QUESTION, (100,))
    n, d = 2, 2
    backend = tog_backend()
    (result,) = build("tog", g, backend, width=n, max_depth=d).answer([q])
    # by hand, ToG's main loop: depth 1: relations of topic (r1), entities via r1 (a1, b1: one
    # call), sufficiency; depth 2: relations of a1 and of b1 (both kept, width 2), entities via
    # r2 from a1 (a2, b2: one call; b1 has no r2 neighbour and r1 leads back), sufficiency; no
    # yes by depth 2: the 6-shot answer without the graph.
    assert stages(backend, TOG_MARKS) == ["relations", "entities", "sufficiency", "relations", "relations",
                                          "entities", "sufficiency", "knowledge"]
    assert result.usage["calls"] == 8 <= 2 * n * d + d + 1
    assert result.fallback == "llm-knowledge" and result.answer == "a3"
    assert backend.seen[-1].count("\nA: First,") == 6 and backend.seen[2].count("Knowledge Triplets:") == 6

    # a yes at depth 2: that reply holds the answer; no call follows it
    backend = tog_backend(sufficient_with="a1, r2, a2")  # shown from depth 2 on
    (result,) = build("tog", g, backend, width=n, max_depth=d).answer([q])
    assert stages(backend, TOG_MARKS)[-1] == "sufficiency" and result.usage["calls"] == 7
    assert (result.answer, result.answer_source, result.fallback) == ("a3", "braces", "")
    assert backend.seen[-1].count("\nA: {Yes}") == 2 and backend.seen[-1].count("\nA: {No}") == 3


def test_tog_expands_every_relation_the_reply_scores_beyond_the_width():
    g = hand_graph([("topic", "r1", "a"), ("topic", "r2", "b"), ("topic", "r3", "c"), ("topic", "r3", "d")])
    backend = ScriptedBackend(rules={
        "Its relations:": "{r1 (Score: 0.5)}\n{r2 (Score: 0.3)}\n{r3 (Score: 0.2)}",
        "Relation followed:": "0.5, 0.5"}, default="{No}")
    build("tog", g, backend, width=1, max_depth=1).answer([Query("q", "explicit", "Which?", (100,))])
    # width 1, yet all three scored relations are expanded (r3's two tails take an entity call)
    assert stages(backend, TOG_MARKS) == ["relations", "entities", "sufficiency", "knowledge"]
    entity_prompt = backend.seen[1]
    assert "Relation followed: r3" in entity_prompt


# ---------------------------------------------------------------- PoG
POG_MARKS = (("decompose", "sub-objectives as possible"), ("relations", "Choose as few relations"),
             ("entities", "Which entities in the list"), ("memory", "one entry per sub-objective"),
             ("evaluation", "Here are five examples"), ("reflection", "Entities set to be retrieved"),
             ("add", "Choose the fewest entities"), ("answer", "answer the question with these triplets"),
             ("knowledge", '"Known"'))


def test_pog_follows_the_official_loop_to_depth_four():
    g = hand_graph(CHAIN + [("a3", "r4", "a4"), ("a3", "r4", "b4")])
    rules = {
        "sub-objectives as possible": '["first step", "the rest"]',
        "Choose as few relations": lambda p: "['" + p.rsplit("Relations: ", 1)[1].splitlines()[0].split("; ")[-1] + "']",
        "Which entities in the list": lambda p: "['" + p.rsplit("[", 1)[1].split("'")[1] + "']",
        "one entry per sub-objective": '{"1": "known", "2": "not yet"}',
        "Here are five examples": '{"A": {"Sufficient": "No", "Answer": "Null"}, "R": "not yet"}',
        "Entities set to be retrieved": '{"Add": "No", "Reason": "keep going"}',
    }
    backend = ScriptedBackend(rules=rules, default='{"A": {"Known": "Yes", "Answer": "a4"}, "R": "known"}')
    q = Query("q", "explicit", QUESTION, (100,))
    (result,) = build("pog", g, backend).answer([q])
    # by hand, PoG's main loop: decompose; then per depth (4, PoG's default): relations of the
    # one entity kept, entities (two candidates: one call), memory, evaluation (not sufficient),
    # reflection (no addition); at depth 3 a2's one r3 neighbour needs no entity call; depth 4's
    # reflection is skipped, the loop ends; no yes: the answer without the graph.
    depth = ["relations", "entities", "memory", "evaluation"]
    lone = ["relations", "memory", "evaluation", "reflection"]
    assert stages(backend, POG_MARKS) == ["decompose", *(depth + ["reflection"]) * 2, *lone, *depth, "knowledge"]
    assert result.usage["calls"] == 1 + 5 * 2 + 4 + 4 + 1
    assert result.extra["stopped_at"] == 4 and result.answer == "a4" and result.fallback == "llm-knowledge"
    assert all(p.max_tokens == 4096 and p.temperature == 0.3 for p in backend.params_seen)
    evaluation = next(p for p in backend.seen if "Here are five examples" in p)
    assert evaluation.count('Output:\n{"A": {"Sufficient":') == 5
    reflection = next(p for p in backend.seen if "Entities set to be retrieved" in p)
    assert reflection.count('Output: {"Add":') == 2

    # the shared-depth variant stops after depth 3 with 512-token replies
    backend = ScriptedBackend(rules=rules, default='{"A": {"Known": "Yes", "Answer": "a4"}, "R": "known"}')
    (result,) = build("pog-d3", g, backend).answer([q])
    assert result.extra["stopped_at"] == 3 and result.usage["calls"] == 1 + 5 * 2 + 3 + 1
    assert all(p.max_tokens == 512 for p in backend.params_seen)


# ---------------------------------------------------------------- StructGPT
STRUCT_MARKS = (("relation", "Candidate relations:"), ("read", "Read the knowledge-graph triples"),
                ("knowledge", "From what you know"))


def test_structgpt_d2_reads_two_steps_without_narrowing_then_its_own_knowledge():
    g = hand_graph(CHAIN)
    backend = ScriptedBackend(rules={
        "Relations already chosen: r1": "The relevant relation: r2",
        "Candidate relations:": "The relevant relation: r1",
        "Read the knowledge-graph triples": "Need further information",
    }, default="The final answers: {a3}")
    q = Query("q", "explicit", QUESTION, (100,))
    (result,) = build("structgpt-d2", g, backend).answer([q])
    # by hand: step 1 picks r1 and reads (topic, r1, a1), (topic, r1, b1); both tails go on (no
    # narrowing call); step 2 picks r2 from a1 and b1 and reads a1's two r2 triples; 2 steps
    # (the official depth) without an answer: one call from the model's own knowledge
    assert stages(backend, STRUCT_MARKS) == ["relation", "read", "relation", "read", "knowledge"]
    assert result.usage["calls"] == 5 == 2 * 2 + 1
    assert "You start from: topic" in backend.seen[2] and "(a1, r2, a2)" in backend.seen[3]
    assert "(a1, r2, b2)" in backend.seen[3]
    assert (result.answer, result.fallback, result.extra["stop"]) == ("a3", "llm-knowledge", "depth-limit")

    # no relation picked: the model's own knowledge at once, not the triples
    backend = ScriptedBackend(rules={"Candidate relations:": "none of these"}, default="The final answers: {x}")
    (result,) = build("structgpt", g, backend).answer([q])
    assert stages(backend, STRUCT_MARKS) == ["relation", "knowledge"] and result.fallback == "llm-knowledge"


def test_every_baseline_names_its_repository_and_deviations():
    methods = all_methods()
    for name, repo in (("tog", "IDEA-FinAI/ToG"), ("pog", "liyichen-cly/PoG"), ("pog-d3", "liyichen-cly/PoG"),
                       ("structgpt", "RUCAIBox/StructGPT"), ("structgpt-d2", "RUCAIBox/StructGPT")):
        assert methods[name].repository == repo and methods[name].deviations
    for name in ("io", "cot", "sc", "adapath", "pathmind"):
        assert methods[name].deviations
    assert "depth 3" in methods["pog-d3"].summary and methods["pog"].resolve_params({})["max_depth"] == 4
    # the AdaPath paper's one three-hop limit by default; the official 2 steps as a listed variant
    assert methods["structgpt"].resolve_params({})["max_depth"] == 3
    assert methods["structgpt-d2"].resolve_params({})["max_depth"] == 2 and "2 reading steps" in \
        methods["structgpt-d2"].summary


def test_every_method_that_reads_an_llm_reply_lists_the_readers_fall_backs():
    # the fall-backs (a named candidate, a stated answer, the best path's end) are in no official code
    methods = all_methods()
    readers = [name for name, spec in methods.items() if spec.llm != "none"]
    assert len(readers) >= 13
    for name in readers:
        listed = [d for d in methods[name].deviations if "shared reader's fall-backs" in d]
        assert len(listed) == 1, name
        assert "'mentioned'" in listed[0] and "'stated'" in listed[0] and "answer-sources table" in listed[0]
    for name in ("tog", "tog2", "pog", "pog-d3", "structgpt", "structgpt-d2", "adapath", "cok", "pathmind",
                 "pathmind+walk"):
        assert "('best-path')" in next(d for d in methods[name].deviations if "fall-backs" in d), name


# ---------------------------------------------------------------- cost accounting
def test_n_samples_from_one_request_are_one_call():
    backend = ScriptedBackend(rules={"": lambda prompt, params: f"{{s{params.seed}}}"})
    usages = [Usage(), Usage()]
    replies = LLMCaller(backend).samples(["first prompt here", "second"], [0, 1], usages,
                                         GenerationParams(temperature=0.7, seed=10), n=4)
    assert replies == [["{s10}", "{s11}", "{s12}", "{s13}"]] * 2
    assert backend.batches == [2] and usages[0].calls == usages[1].calls == 1
    # the prompt once, the four completions summed (count_tokens: round(words * 4/3))
    assert usages[0].prompt_tokens == round(3 * 4 / 3) and usages[0].completion_tokens == 4 * round(4 / 3)
    assert usages[0].as_dict()["estimated_calls"] == 1  # scripted counts are estimates


def test_n_samples_over_http_are_one_request_with_the_servers_usage():
    inner = ScriptedBackend(rules={"": lambda prompt, params: f"sample {params.seed}"})
    server = make_server(inner, port=0, name="m")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        backend = OpenAIHTTPBackend(f"http://127.0.0.1:{server.server_port}", "m", retries=0)
        usage = Usage()
        replies = LLMCaller(backend).samples(["one two three"], [0], [usage], GenerationParams(seed=5), n=3)
    finally:
        server.shutdown()
        server.server_close()
    assert replies == [["sample 5", "sample 6", "sample 7"]]
    assert server.batcher.batches == [1] and inner.batches == [1]  # one request, its samples from one call
    # the server's usage (its backend's counts): the prompt once, the completions summed;
    # reported, so not estimated
    assert usage.calls == 1 and usage.prompt_tokens == count_tokens("one two three")
    assert usage.completion_tokens == 3 * count_tokens("sample 5") and usage.estimated_calls == 0


class _Flaky(BaseHTTPRequestHandler):
    """Fails the first ``failures`` requests with a 503, then replies without usage."""

    failures = 0
    seen = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen += 1
        if type(self).seen <= self.failures:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        payload = json.dumps({"choices": [{"index": 0, "message": {"content": "four words of reply"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_usage_less_replies_are_estimated_and_retries_counted_apart():
    handler = type("Handler", (_Flaky,), {"failures": 2, "seen": 0})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        backend = OpenAIHTTPBackend(f"http://127.0.0.1:{httpd.server_port}", "m", retries=3, backoff=0.01)
        usage = Usage()
        LLMCaller(backend)(["a b c"], [0], [usage])
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert handler.seen == 3
    assert (usage.calls, usage.failed_attempts, usage.estimated_calls) == (1, 2, 1)
    # no usage in the reply: words x 4/3
    assert (usage.prompt_tokens, usage.completion_tokens) == (4, 5)
    row = {"calls": 1, "prompt_tokens": 4, "completion_tokens": 5, "seconds": 0.1}
    table = efficiency({
        "reported": {"usage": {"n": 1, **row}},
        "estimated": {"usage": {"n": 1, **row, "estimated_calls": 1, "failed_attempts": 2, "estimated_share": 1.0}},
    })
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in table.splitlines() if line.startswith("| ") and "Method" not in line}
    assert lines["estimated"][2].startswith("~") and lines["estimated"][3].startswith("~")
    assert lines["estimated"][-2:] == ["100%", "2"] and lines["reported"][-2:] == ["0%", "0"]
    assert not lines["reported"][2].startswith("~")
