"""Dataset loaders: real STaRK-Prime and BioStrat-QA files, MedDDx's schema, bad records."""

import json

import pytest

from adapath.datasets import medddx, stark_prime
from adapath.datasets.biostrat import load_records, query_text
from adapath.errors import InputError
from tests.conftest import SHARED

STARK = SHARED / "stark_prime"


@pytest.mark.skipif(not STARK.is_dir(), reason="../shared/data/stark_prime is not present")
def test_stark_prime_real_files():
    questions = stark_prime.load_questions(STARK / "stark_qa.csv")
    assert len(questions) > 11000
    first = questions[0]
    assert first.id == 10328 and first.answer_ids == (18423,)
    splits = {s: stark_prime.load_split(STARK, s) for s in stark_prime.SPLITS}
    assert [len(splits[s]) for s in stark_prime.SPLITS] == [
        sum(1 for x in (STARK / f"{s}.index").read_text().splitlines() if x.strip()) for s in stark_prime.SPLITS]
    ids = [set(q.id for q in splits[s]) for s in stark_prime.SPLITS]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    human = stark_prime.load_questions(STARK / "stark_qa_human_generated_eval.csv")
    assert human[1].answer_ids == (95312, 35882)


def test_stark_bad_rows(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,query,answer_ids\n1,"what?",[3]\n2,"why?",[x]\n')
    with pytest.raises(InputError, match="q.csv:3: answer_ids"):
        stark_prime.load_questions(path)
    path.write_text("id,question\n1,a\n")
    with pytest.raises(InputError, match="missing column"):
        stark_prime.load_questions(path)


def test_medddx_schema(tmp_path):
    good = {"id": "a", "question": "Fever and rash?", "options": ["Measles", "Gout", "Asthma", "Acne"],
            "answer": "A", "tier": "Basic"}
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "answer": 2, "tier": "Expert"}) + "\n")
    questions = medddx.load_questions(path)
    assert [q.answer for q in questions] == [0, 2] and questions[1].tier == "Expert"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "options": ["x"]}) + "\n")
    with pytest.raises(InputError, match="m.jsonl:2: 'options'"):
        medddx.load_questions(path)
    path.write_text(json.dumps({**good, "tier": "Hard"}) + "\n")
    with pytest.raises(InputError, match="m.jsonl:1: 'tier'"):
        medddx.load_questions(path)


def test_biostrat_records(dev_jsonl, tmp_path):
    records = load_records(dev_jsonl)
    assert len(records) == 898
    assert query_text(records[0], "bare") == records[0]["bare_query"]
    bad = tmp_path / "b.jsonl"
    record = dict(records[0])
    del record["triplets"]
    bad.write_text(json.dumps(records[1]) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError, match="b.jsonl:2: record lacks field 'triplets'"):
        load_records(bad)


def test_a_file_under_the_wrong_prefix_is_named_with_the_prefix_that_fits(tmp_path, capsys):
    from adapath.datasets.specs import load_query_set
    from tests.conftest import run_cli

    biostrat = tmp_path / "test.jsonl"  # the first line is all that is read: a BioStrat-QA record's keys
    biostrat.write_text(json.dumps({"data_id": 1, "explicit_query": "Which drug?", "valid_answer_ids": [1]}) + "\n")
    code, _, err = run_cli(["answer", "--kg", tmp_path, "--queries", f"stark:{biostrat}", "--out", tmp_path / "a.jsonl",
                            "--encoder", "hashing"], capsys)
    assert code == 2
    assert err == (f"adapath: error: {biostrat}: not a STaRK-Prime CSV (its first line is a BioStrat-QA record); "
                   f"give it as biostrat:{biostrat}\n")
    stark = tmp_path / "stark.csv"
    stark.write_text('\ufeffid,query,answer_ids\n1,"what?",[3]\n')  # with the byte-order mark some editors write
    with pytest.raises(InputError, match=r"^.*stark.csv: not a BioStrat-QA JSONL \(its first line is a STaRK-Prime "
                                         r"CSV header\); give it as stark:.*stark.csv$"):
        load_query_set(f"biostrat:{stark}")
    medddx_file = tmp_path / "m.jsonl"
    medddx_file.write_text(json.dumps({"id": "q1", "question": "?", "options": ["a", "b", "c", "d"], "answer": "A",
                                       "tier": "Basic"}) + "\n")
    with pytest.raises(InputError, match="not a question-only JSONL .*; give it as medddx:"):
        load_query_set(f"questions:{medddx_file}")
    # a file of no known kind keeps the loader's own message
    other = tmp_path / "other.jsonl"
    other.write_text('{"text": "?"}\n')
    with pytest.raises(InputError, match="missing column"):
        load_query_set(f"stark:{other}")
