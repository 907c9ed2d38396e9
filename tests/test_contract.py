"""The method contract, the registry, the runner and the query specs."""

import json
import signal

import pytest

from adapath.contract import Query, Result
from adapath.datasets.specs import load_query_set
from adapath.errors import InputError
from adapath.llm import ScriptedBackend, Usage
from adapath.llm.parse import read_answer, read_option
from adapath.methods.base import LLMCaller, MethodSpec, Param
from adapath.methods.registry import all_methods
from adapath.methods.run import Interrupted, finished_pairs, load_results, run_queries
from tests.conftest import SHARED, run_cli
from tests.helpers import ctrl_c_enabled


class EchoMethod:
    """Answers each question with its own text reversed; counts the batches it saw."""

    name = "echo"

    def __init__(self, fail_on=None):
        self.batches, self.fail_on = [], fail_on

    def answer(self, queries):
        self.batches.append([q.id for q in queries])
        if self.fail_on is not None and self.fail_on in [q.id for q in queries]:
            raise KeyboardInterrupt
        return [Result(q.id, q.level, q.text[::-1], method=self.name, extra={"n": len(q.text)}) for q in queries]


def queries(n, level="explicit"):
    return [Query(str(i), level, f"question {i}", (i,)) for i in range(n)]


def test_result_json_round_trip_keeps_shared_and_extra_fields():
    result = Result("7", "bare", "aspirin", method="m", raw="{aspirin}", answer_source="braces",
                    paths=[[[1, "indication", 2]]], explored={"1": [2]}, metapaths=[{"metapath": "x", "score": 1.0}],
                    control={"hops": 1}, fallback="", usage=Usage(2, 10, 3, 0.5).as_dict(),
                    extra={"prioritized": [2]})
    line = json.loads(json.dumps(result.to_json()))
    assert line["prioritized"] == [2] and line["usage"]["prompt_tokens"] == 10
    assert Result.from_json(line) == result
    with pytest.raises(ValueError):
        Result("1", "x", "a", extra={"answer": "shadow"}).to_json()


def test_llm_caller_batches_one_step_and_charges_each_owner():
    backend = ScriptedBackend(default="{ok}")
    usages = [Usage(), Usage()]
    call = LLMCaller(backend)
    replies = call(["one two three", "four", "five six"], [0, 1, 0], usages)
    assert replies == ["{ok}"] * 3 and backend.batches == [3]
    # ScriptedBackend counts round(words * 4 / 3) tokens per prompt
    assert usages[0].calls == 2 and usages[0].prompt_tokens == 4 + 3
    assert usages[1].calls == 1 and usages[1].prompt_tokens == 1


def test_params_parse_by_the_defaults_type():
    spec = MethodSpec("m", "s", "p", lambda c: None, params=(Param("width", 3, "w"), Param("free", False, "f")))
    assert spec.resolve_params({"width": "5", "free": "true"}) == {"width": 5, "free": True}
    assert spec.resolve_params({}) == {"width": 3, "free": False}
    with pytest.raises(InputError, match="takes no parameter 'depth'"):
        spec.resolve_params({"depth": "2"})
    with pytest.raises(InputError, match="^--param width='wide': expected an integer$"):
        spec.resolve_params({"width": "wide"})
    with pytest.raises(InputError, match="^--param free='maybe': expected true or false$"):
        spec.resolve_params({"free": "maybe"})
    weighted = MethodSpec("m", "s", "p", lambda c: None, params=(Param("alpha", 0.5, "a"),))
    with pytest.raises(InputError, match="^--param alpha='half': expected a number$"):
        weighted.resolve_params({"alpha": "half"})


def test_registry_lists_adapath_and_pathmind_without_heavy_imports():
    import sys

    before = {m for m in sys.modules if m.split(".")[0] in ("torch", "vllm", "faiss", "ray")}
    methods = all_methods()
    assert {"adapath", "pathmind"} <= set(methods)
    assert {m for m in sys.modules if m.split(".")[0] in ("torch", "vllm", "faiss", "ray")} == before
    for spec in methods.values():
        assert spec.summary and spec.paper and spec.llm in ("required", "optional", "none")


def test_runner_resumes_skips_finished_and_drops_a_torn_line(tmp_path):
    out = tmp_path / "r.jsonl"
    first = EchoMethod()
    summary = run_queries(lambda: first, queries(5), out, settings={"m": 1}, batch=2)
    assert summary.new == 5 and first.batches == [["0", "1"], ["2", "3"], ["4"]]
    with open(out, "a") as handle:
        handle.write('{"id": "9", "lev')  # a crash mid-line
    second = EchoMethod()
    summary = run_queries(lambda: second, queries(7), out, settings={"m": 1}, batch=4)
    assert summary.already == 5 and summary.new == 2 and second.batches == [["5", "6"]]
    results = load_results(out)
    assert [r.id for r in results] == [str(i) for i in range(7)]
    assert results[3].answer == "3 noitseuq" and results[3].extra == {"n": 10}
    assert finished_pairs(out) == {(str(i), "explicit") for i in range(7)}


def test_runner_refuses_other_settings_unless_forced(tmp_path):
    out = tmp_path / "r.jsonl"
    run_queries(EchoMethod, queries(2), out, settings={"method": "a", "params": {"beam": 3}})
    with pytest.raises(InputError, match="made with params="):
        run_queries(EchoMethod, queries(2), out, settings={"method": "a", "params": {"beam": 4}})
    summary = run_queries(EchoMethod, queries(2), out, settings={"method": "a", "params": {"beam": 4}}, force=True)
    assert summary.new == 2 and summary.already == 0


def test_runner_writes_nothing_when_the_method_fails_first(tmp_path):
    out = tmp_path / "r.jsonl"

    def broken():
        raise InputError("bad input")

    with pytest.raises(InputError):
        run_queries(broken, queries(3), out)
    assert list(tmp_path.iterdir()) == []


def test_interrupt_keeps_finished_batches(tmp_path):
    out = tmp_path / "r.jsonl"
    with pytest.raises(Interrupted, match="interrupted: 2 results kept"):
        run_queries(lambda: EchoMethod(fail_on="3"), queries(5), out, batch=2)
    assert finished_pairs(out) == {("0", "explicit"), ("1", "explicit")}


def test_read_answer_falls_back_in_order():
    assert read_answer("The answer is {Aspirin}.", ["x"], "best") == ("Aspirin", "braces")
    # no braces: the longest candidate named in the reply wins
    assert read_answer("I think breast cancer, not cancer.", ["cancer", "breast cancer"], "b") == \
        ("breast cancer", "mentioned")
    assert read_answer("no idea", ["aspirin"], "warfarin") == ("warfarin", "best-path")
    # stated in words, no braces and no candidate named: the phrase after "is" / ":"
    assert read_answer("The single best answer entity's name is: Aspirin", ["x"], "w") == ("Aspirin", "stated")
    assert read_answer("Answer: breast cancer. It spreads.", [], "") == ("breast cancer", "stated")
    assert read_answer("The gene linked to it is unknown", [], "w") == ("w", "best-path")  # no answer stated
    assert read_answer("", [], "") == ("", "none")
    assert read_option("{C}", ["a", "b", "c", "d"]) == ("C", "braces")
    assert read_option("It is likely psoriasis.", ["eczema", "psoriasis", "acne", "hives"]) == ("B", "mentioned")


def test_question_only_spec_and_errors(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "Which drug treats x?", "topic_ids": [3]}) + "\n" +
                    json.dumps({"id": "b", "question": "And y?", "topic_entities": {"5": "y"},
                                "options": ["p", "q"]}) + "\n")
    query_set = load_query_set(f"questions:{path}")
    assert query_set.queries(query_set.resolve_levels(None)) == [
        Query("a", "question", "Which drug treats x?", (3,)), Query("b", "question", "And y?", (5,), ("p", "q"))]
    with pytest.raises(InputError, match="has no gold answer"):
        query_set.gold()
    path.write_text(json.dumps({"id": "a", "question": "x?"}) + "\n")
    with pytest.raises(InputError, match=r"q.jsonl:1: a question needs at least one topic id"):
        load_query_set(f"questions:{path}")
    with pytest.raises(InputError, match="expected one of biostrat:PATH"):
        load_query_set(f"nonsense:{path}")


def test_stark_spec_splits_and_topics(tmp_path):
    folder = SHARED / "stark_prime"
    if not (folder / "stark_qa.csv").is_file():
        pytest.skip("STaRK-Prime files are not present")
    test = load_query_set(f"stark:{folder}#test")
    ids = [line.strip() for line in (folder / "test.index").read_text().splitlines() if line.strip()]
    assert [item.id for item in test.items] == ids
    human = load_query_set(f"stark:{folder}#human")
    assert {item.gold.group for item in human.items} == {"human"}
    assert all(item.gold.unnamed_ids == item.gold.answer_ids for item in human.items)
    links = tmp_path / "topics.jsonl"
    links.write_text(json.dumps({"id": human.items[0].id, "topic_ids": [42]}) + "\n" +
                     json.dumps({"id": human.items[1].id, "error": "no template grounds"}) + "\n")
    linked = load_query_set(f"stark:{folder}#human", topics=links)
    answerable = linked.queries(["question"])
    assert [q.id for q in answerable] == [human.items[0].id] and answerable[0].topic_ids == (42,)
    assert linked.unanswerable() == len(human.items) - 1


def test_methods_command_lists_every_method(capsys):
    code, out, err = run_cli(["methods", "--json"], capsys)
    assert code == 0, err
    listed = json.loads(out)
    assert set(listed) == set(all_methods())
    assert listed["adapath"]["params"]["beam"]["default"] == 3


def test_sigint_in_a_real_process_prints_the_resume_line(tmp_path):
    """A real Ctrl-C (SIGINT) during `answer`: one line, exit 130, results kept."""
    import subprocess
    import sys
    import time

    script = tmp_path / "slow.py"
    script.write_text(
        "import time, sys\n"
        "from adapath.contract import Result\n"
        "from adapath.methods.run import run_queries, Interrupted\n"
        "from adapath.contract import Query\n"
        "class Slow:\n"
        "    name = 'slow'\n"
        "    def answer(self, qs):\n"
        "        time.sleep(0.3)\n"
        "        print('batch', flush=True)\n"
        "        return [Result(q.id, q.level, 'a') for q in qs]\n"
        "qs = [Query(str(i), 'explicit', 'q', (1,)) for i in range(200)]\n"
        "try:\n"
        f"    run_queries(Slow, qs, {str(tmp_path / 'r.jsonl')!r}, batch=1)\n"
        "except Interrupted as exc:\n"
        "    print(exc, file=sys.stderr); sys.exit(130)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_enabled)
    assert proc.stdout.readline().strip() == "batch"
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    kept = len((tmp_path / "r.jsonl").read_text().splitlines())
    assert kept >= 1 and f"interrupted: {kept} results kept" in err
