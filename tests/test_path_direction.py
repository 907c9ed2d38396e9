"""A path step walked against its stored edge reads as such: in PathMind's paths, the reasoning
prompt, the reasoner data, result files (the "reversed" mark), the viewer's chains and the
evaluation's triplets; checked on a hand-built graph whose stored directions are known."""

import numpy as np
import pytest

from adapath.contract import (
    REVERSED,
    Result,
    ResultShapeError,
    check_result_shape,
    path_step,
    step_reversed,
)
from adapath.engine.graph import KnowledgeGraph

NAMES = ("aspirin", "PTGS2", "pain", "ibuprofen")
# stored directions: aspirin -target-> PTGS2, pain -associated with-> PTGS2, ibuprofen -target-> PTGS2
EDGES = (("aspirin", "target", "PTGS2"), ("pain", "associated with", "PTGS2"), ("ibuprofen", "target", "PTGS2"))


def hand_graph() -> KnowledgeGraph:
    relations = ("associated with", "target")
    index = {n: i for i, n in enumerate(NAMES)}
    return KnowledgeGraph.from_edges(
        np.array([index[h] for h, _, _ in EDGES]), np.array([index[t] for _, _, t in EDGES]),
        np.array([relations.index(r) for _, r, _ in EDGES]), node_type=np.zeros(len(NAMES), dtype=np.int8),
        node_id=np.arange(100, 100 + len(NAMES)), names=list(NAMES), descriptions=[f"{n}." for n in NAMES],
        type_names=("thing",), relation_names=relations, relation_descriptions=relations)


@pytest.fixture(scope="module")
def pathmind():
    from adapath.methods.pathmind.config import TrainConfig
    from adapath.methods.pathmind.infer import PathMind
    from adapath.retrieval.dense import HashingEncoder

    return PathMind(hand_graph(), None, TrainConfig(), HashingEncoder())


def walk(pathmind, nodes):
    """PathMind's steps along the walk ``nodes`` (names), as its selection would hand them over."""
    from adapath.methods.pathmind.infer import Prioritized
    from adapath.methods.pathmind.select import Selection

    g = pathmind.graph
    at = [NAMES.index(n) for n in nodes]
    selection = Selection(rounds=[[v] for v in at[1:]], parent=dict(zip(at[1:], at[:-1])), final=[at[-1]])
    n = g.num_nodes
    prioritized = Prioritized(np.zeros(n), np.ones(n, dtype=bool), np.zeros(n, dtype=np.int64))
    return pathmind.paths(selection, selection.final, prioritized)


def test_a_step_against_the_stored_edge_is_marked_by_pathmind(pathmind):
    stored = {(h, r, t) for h, r, t in EDGES}
    (steps,) = walk(pathmind, ["aspirin", "PTGS2", "pain"])
    named = pathmind.named([steps])[0]
    assert [(h, r, t) for h, r, t, _ in named] == [("aspirin", "target", "PTGS2"), ("PTGS2", "associated with", "pain")]
    for head, relation, tail, forward in named:  # the reference: the edges as built above
        assert forward == ((head, relation, tail) in stored)
        assert forward != ((tail, relation, head) in stored)
    assert [forward for *_, forward in named] == [True, False]


def test_the_reasoning_prompt_and_the_reasoner_data_print_a_reversed_step_reversed(pathmind):
    from adapath.methods.pathmind.sft_dpo import _path_text

    named = pathmind.named(walk(pathmind, ["aspirin", "PTGS2", "pain"]) + walk(pathmind, ["pain", "PTGS2", "ibuprofen"]))
    prompt = pathmind.prompt("Which disease is linked to aspirin?", named)
    assert "1. aspirin -[target]-> PTGS2 <-[associated with]- pain" in prompt.splitlines()
    assert "2. pain -[associated with]-> PTGS2 <-[target]- ibuprofen" in prompt.splitlines()
    assert _path_text(named) == ("aspirin -[target]-> PTGS2 <-[associated with]- pain; "
                                 "pain -[associated with]-> PTGS2 <-[target]- ibuprofen")
    # a path given without directions reads as before: every step along its edge
    from adapath.llm.prompts import path_chain

    assert path_chain([("a", "r", "b"), ("b", "s", "c")]) == "a -[r]-> b -[s]-> c"


def test_result_files_mark_the_reversed_step_and_old_files_still_read():
    steps = [path_step(100, "target", 101), path_step(101, "associated with", 102, forward=False)]
    assert steps == [[100, "target", 101], [101, "associated with", 102, REVERSED]]
    assert [step_reversed(s) for s in steps] == [False, True]
    line = Result("q1", "explicit", "pain", paths=[steps]).to_json()
    check_result_shape(line)
    assert Result.from_json(line).paths == [steps]
    check_result_shape({"id": "q0", "answer": "x", "paths": [[[100, "target", 101]]]})  # a file from before
    for bad in ([100, "target", 101, "backwards"], [100, "target", 101, True], [100, "target", 101, REVERSED, 1]):
        with pytest.raises(ResultShapeError, match=r"is not \[head_id, relation, tail_id\]"):
            check_result_shape({"id": "q2", "answer": "x", "paths": [[bad]]})


def test_the_viewer_and_the_evaluation_read_the_mark():
    from adapath.eval.scoring import retrieved_triplets
    from adapath.view.extract import _chain

    steps = [[100, "target", 101], [101, "associated with", 102, REVERSED]]
    assert _chain(steps, "x") == {"n": [100, 101, 102], "r": ["target", "associated with"], "b": [1]}
    assert _chain([[100, "target", 101], [101, "associated with", 102]], "x") == {
        "n": [100, 101, 102], "r": ["target", "associated with"]}  # no mark, no "b": as before
    # a marked step given tail-first is drawn turned round, which is its stored direction
    assert _chain([[100, "target", 101], [102, "associated with", 101, REVERSED]], "x") == {
        "n": [100, 101, 102], "r": ["target", "associated with"]}
    result = Result("q1", "explicit", "pain", paths=[steps])
    assert retrieved_triplets(result) == {1: [(100, "target", 101)], 2: [(101, "associated with", 102)]}
    graph = hand_graph()
    assert graph.named_triplets(steps) == [("aspirin", "target", "PTGS2"), ("PTGS2", "associated with", "pain")]


def test_the_viewer_draws_a_reversed_step_with_a_left_arrow(tmp_path):
    """In headless Chromium: the path list writes the marked step "← associated with", the
    drawing's label of that edge (stored right to left as drawn) starts with "←", and the
    unmarked step reads as before."""
    import os

    from adapath.datasets.biostrat import records_query_set
    from adapath.view import write_question_page
    from adapath.view.headless import Browser, find_chromium

    try:
        import websocket  # noqa: F401
    except ImportError:
        pytest.skip("the websocket-client package is not installed (pip install -e '.[dev]')")
    if find_chromium() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is not installed (Debian: apt-get install chromium)")
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    graph = hand_graph()
    record = {"template_id": "2h", "num_hops": 2, "path_node_ids": [100, 101, 102],
              "triplets": [["aspirin", "target", "PTGS2"], ["PTGS2", "associated with", "pain"]],
              "topic_entities": {"100": "aspirin"}, "answer_entity": {"id": 102, "name": "pain", "type": "thing"},
              "node_metadata": [], "explicit_query": "Which disease is linked to aspirin?",
              "implicit_query": "Which disease?", "bare_query": "Which?", "valid_answer_ids": [102], "data_id": 1}
    steps = [path_step(100, "target", 101), path_step(101, "associated with", 102, forward=False)]
    result = Result("1", "explicit", "pain", method="pathmind", paths=[steps])
    out = tmp_path / "view.html"
    write_question_page({"pathmind": [result]}, records_query_set([record]).items, graph, out)
    with Browser(width=1280, height=800) as browser:
        browser.open(out.as_uri())
        assert browser.errors() == []
        browser.evaluate("document.querySelector('.row[data-key=\"1|explicit\"]').click()")
        relations = browser.evaluate("[...document.querySelectorAll('.pathlist .rel')].map(r => r.textContent)")
        labels = browser.evaluate("[...document.querySelectorAll('svg text.edge-label')].map(t => t.firstChild.data)")
    assert relations == ["target", "← associated with"]
    # the returned path and the gold path share both edges: one label each
    assert sorted(labels) == ["target", "← associated with"]
