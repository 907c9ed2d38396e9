"""Property-based tests of the readers a user feeds by hand: BioStrat-QA records, result files and
edge tables. Whatever the input (a field removed, null or of another type, broken JSON, odd
Unicode, a byte-order mark, random bytes), the reader returns its parsed value or raises the
one-line ``InputError``; never another exception."""

import copy
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapath.errors import InputError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63)
                | st.floats(allow_nan=False) | st.text(max_size=8))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
BOM = b"\xef\xbb\xbf"

RECORD = {
    "template_id": "2h-01", "num_hops": 2, "path_node_ids": [10, 11, 12],
    "triplets": [["Aspirin", "target", "PTGS2"], ["PTGS2", "associated with", "Asthma"]],
    "topic_entities": {"10": "Aspirin"},
    "answer_entity": {"id": 12, "name": "Asthma", "type": "disease"},
    "node_metadata": [{"id": 10, "name": "Aspirin", "type": "drug", "description": "A drug."},
                      {"id": 11, "name": "PTGS2", "type": "gene/protein", "description": "A gene."},
                      {"id": 12, "name": "Asthma", "type": "disease", "description": ""}],
    "explicit_query": "Which disease is linked to Aspirin's target PTGS2?",
    "implicit_query": "Which disease is linked to the target of a common painkiller?",
    "bare_query": "Which airway disease?", "valid_answer_ids": [12, 13], "valid_answer_names": ["Asthma", "COPD"],
    "data_id": 7,
}

RESULT = {
    "id": "7", "level": "explicit", "method": "tog", "answer": "Asthma", "raw": "{Asthma}",
    "answer_source": "braces", "paths": [[[10, "target", 11], [11, "associated with", 12]]],
    "explored": {"1": [11], "2": [12]}, "metapaths": [{"metapath": "drug -[target]- gene/protein", "score": 0.5}],
    "control": {"answer_type": "disease", "hops": 2}, "fallback": "",
    "usage": {"calls": 2, "prompt_tokens": 100, "completion_tokens": 10, "seconds": 0.5},
    "explored_edges": {"1": [[10, "target", 11]]},
}


def paths_of(value, prefix=()):
    """Every place inside a JSON value, as a tuple of keys and indexes."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield prefix + (key,)
            yield from paths_of(inner, prefix + (key,))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield prefix + (i,)
            yield from paths_of(inner, prefix + (i,))


@st.composite
def spoiled(draw, good):
    """``good`` with one to three of its places removed or replaced by any JSON value."""
    value = copy.deepcopy(good)
    for _ in range(draw(st.integers(1, 3))):
        places = list(paths_of(value))
        if not places:
            break
        *parents, last = draw(st.sampled_from(places))
        holder = value
        for key in parents:
            holder = holder[key]
        if draw(st.booleans()):
            holder.pop(last) if isinstance(holder, dict) else holder.pop(last)
        else:
            holder[last] = draw(JSON_VALUES)
    return value


def lines_of(draw_lines):
    """A file's bytes from JSON objects or raw byte lines, maybe after a byte-order mark."""
    return st.tuples(st.booleans(), draw_lines).map(lambda t: (BOM if t[0] else b"") + b"".join(t[1]))


def as_line(obj) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, allow_nan=True) + "\n").encode("utf-8", "surrogatepass")


def one_line_or_value(read, data: bytes, suffix: str = ".jsonl"):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(data)
        try:
            return read(path)
        except InputError as exc:
            message = str(exc)
            assert message and "\n" not in message, message
            return exc


# ---------------------------------------------------------------- BioStrat-QA records
def read_records(path):
    from adapath.datasets.biostrat import load_records, training_queries
    from adapath.datasets.specs import load_query_set

    query_set = load_query_set(f"biostrat:{path}")
    training = training_queries(load_records(path))
    for item in query_set.items:  # what eval reads: gold names, ids and the reference path
        assert isinstance(item.gold.metapath, str) and all(isinstance(i, int) for i in item.gold.answer_ids)
    return query_set, training


RECORD_FILES = lines_of(st.lists(spoiled(RECORD).map(as_line) | st.just(as_line(RECORD)), min_size=1, max_size=3))


def test_the_reference_record_is_read():
    query_set, training = read_records_from_bytes(as_line(RECORD))
    assert [item.id for item in query_set.items] == ["7"] and training[0].path_ids == (10, 11, 12)
    assert query_set.items[0].gold.metapath == "drug -[target]- gene/protein -[associated with]- disease"


def read_records_from_bytes(data):
    outcome = one_line_or_value(read_records, data)
    if isinstance(outcome, InputError):
        raise outcome
    return outcome


@SETTINGS
@given(RECORD_FILES)
def test_any_spoiled_record_is_read_or_refused_in_one_line(data):
    one_line_or_value(read_records, data)


@SETTINGS
@given(lines_of(st.lists(st.binary(max_size=40).map(lambda b: b + b"\n") | st.text(max_size=40).map(
    lambda t: (t + "\n").encode("utf-8", "surrogatepass")), min_size=1, max_size=3)))
def test_any_bytes_as_records_are_read_or_refused_in_one_line(data):
    one_line_or_value(read_records, data)


@pytest.mark.parametrize("field", ["valid_answer_names", "answer_entity", "node_metadata", "triplets",
                                   "topic_entities", "path_node_ids", "num_hops", "data_id"])
@pytest.mark.parametrize("value", [3, None, "x", [1], {"a": 1}, True])
def test_each_field_of_the_wrong_type_is_one_line(field, value):
    """The issue's hand-made variants, each field given each wrong type."""
    record = {**RECORD, field: value}
    one_line_or_value(read_records, as_line(record))


def test_a_number_for_valid_answer_names_names_the_field():
    with pytest.raises(InputError, match=r":1: field 'valid_answer_names' must be a list of names"):
        read_records_from_bytes(as_line({**RECORD, "valid_answer_names": 3}))


def test_a_byte_order_mark_is_read():
    query_set, _ = read_records_from_bytes(BOM + as_line(RECORD))
    assert query_set.items[0].id == "7"


def test_a_lone_surrogate_is_refused_in_one_line():
    line = as_line(RECORD).replace(b"Which airway disease?", b"Which \\ud800 disease?")
    with pytest.raises(InputError, match=r":1: .*not valid Unicode"):
        read_records_from_bytes(line)


def test_deep_nesting_is_refused_in_one_line():
    with pytest.raises(InputError, match=":1: "):
        read_records_from_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")


# ---------------------------------------------------------------- result files
def read_results(path):
    from adapath.eval.inputs import load_results

    return load_results(path)


@SETTINGS
@given(lines_of(st.lists(spoiled(RESULT).map(as_line) | st.just(as_line(RESULT)), min_size=1, max_size=3)))
def test_any_spoiled_result_line_is_read_or_refused_in_one_line(data):
    one_line_or_value(read_results, data)


@SETTINGS
@given(lines_of(st.lists(st.binary(max_size=40).map(lambda b: b + b"\n"), min_size=1, max_size=3)))
def test_any_bytes_as_results_are_read_or_refused_in_one_line(data):
    one_line_or_value(read_results, data)


def test_the_reference_result_is_read():
    (result,) = one_line_or_value(read_results, BOM + as_line(RESULT))
    assert result.answer == "Asthma" and result.paths == RESULT["paths"]


def resumed_pairs(path):
    from adapath.methods.run import finished_pairs

    return finished_pairs(path)


@SETTINGS
@given(lines_of(st.lists(spoiled(RESULT).map(as_line) | st.just(as_line(RESULT))
                         | st.binary(max_size=30).map(lambda b: b + b"\n"), min_size=1, max_size=3)))
def test_any_result_file_to_resume_is_read_or_refused_in_one_line(data):
    one_line_or_value(resumed_pairs, data)


def test_resuming_a_file_with_a_byte_order_mark_keeps_every_line(tmp_path):
    path = tmp_path / "r.jsonl"
    data = BOM + as_line(RESULT) + as_line({**RESULT, "id": "8"})
    path.write_bytes(data)
    assert resumed_pairs(path) == {("7", "explicit"), ("8", "explicit")}
    assert path.read_bytes() == data  # nothing cut


def test_resuming_cuts_a_torn_last_line_only(tmp_path):
    path = tmp_path / "r.jsonl"
    whole = as_line(RESULT) + b"\n"  # a blank line is no reason to stop
    path.write_bytes(whole + as_line({**RESULT, "id": "8"})[:20])  # a crash mid-write
    assert resumed_pairs(path) == {("7", "explicit")} and path.read_bytes() == whole
    broken = as_line(RESULT) + b'{"id": "8", "ans\n' + as_line({**RESULT, "id": "9"})
    path.write_bytes(broken)
    with pytest.raises(InputError, match=r"r.jsonl:2: not a complete result line, and lines follow it"):
        resumed_pairs(path)
    assert path.read_bytes() == broken  # the lines after it are not lost


# ---------------------------------------------------------------- edge tables
NODES = "id,name,type,description\n10,Aspirin,drug,A drug.\n11,PTGS2,gene/protein,A gene.\n12,Asthma,disease,\n"
EDGES = "head,relation,tail\n10,target,11\n11,associated with,12\n"


def read_edges(folder):
    from adapath.sources.edges import load_edges

    return load_edges(folder / "edges.csv", folder / "nodes.csv")


def read_tables(nodes: bytes, edges: bytes):
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "nodes.csv").write_bytes(nodes)
        (folder / "edges.csv").write_bytes(edges)
        try:
            return read_edges(folder)
        except InputError as exc:
            assert str(exc) and "\n" not in str(exc), str(exc)
            return exc


@st.composite
def spoiled_csv(draw, good: str):
    """``good`` with a cell, a line or a few characters replaced by anything."""
    rows = [line.split(",") for line in good.splitlines()]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(rows) - 1))
        choice = draw(st.integers(0, 2))
        if choice == 0 and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(st.text(max_size=8))
        elif choice == 1:
            rows[i] = draw(st.lists(st.text(max_size=6), max_size=5))
        else:
            rows.pop(i) if len(rows) > 1 else None
    text = "\n".join(",".join(row) for row in rows) + "\n"
    return (BOM if draw(st.booleans()) else b"") + text.encode("utf-8", "surrogatepass")


def test_the_reference_tables_are_read():
    graph = read_tables(NODES.encode(), EDGES.encode())
    assert graph.num_nodes == 3 and graph.num_edges == 2
    assert read_tables(BOM + NODES.encode(), BOM + EDGES.encode()).num_nodes == 3


@SETTINGS
@given(spoiled_csv(NODES), spoiled_csv(EDGES))
def test_any_spoiled_edge_table_is_read_or_refused_in_one_line(nodes, edges):
    read_tables(nodes, edges)


@SETTINGS
@given(st.binary(max_size=80), st.binary(max_size=80))
def test_any_bytes_as_edge_tables_are_read_or_refused_in_one_line(nodes, edges):
    read_tables(NODES.encode() if not nodes else nodes, edges)


@pytest.mark.parametrize("nodes, edges, where", [
    (b"id,na\rme,type,description\n10,Aspirin,drug,A drug.\n", EDGES.encode(), "nodes.csv:1:"),  # in the header
    (NODES.encode(), b"head,relation,tail\n10,tar\rget,11,extra\n", "edges.csv:2:"),  # in a row Arrow refuses
])
def test_a_bare_carriage_return_in_an_edge_table_is_one_line(nodes, edges, where):
    # csv.reader refuses such a line with csv.Error; the reader names the file and line instead
    error = read_tables(nodes, edges)
    assert isinstance(error, InputError) and "carriage return" in str(error) and where in str(error), error


# ---------------------------------------------------------------- other hand-edited files
def test_files_a_user_may_edit_are_read_with_a_byte_order_mark(tmp_path):
    from adapath.datasets import stark_prime
    from adapath.jsonl import read_json_object
    from adapath.methods.run import check_settings

    csv_path = tmp_path / "stark.csv"
    csv_path.write_bytes(BOM + b'id,query,answer_ids\n1,"what?",[3]\n')
    assert [(q.id, q.answer_ids) for q in stark_prime.load_questions(csv_path)] == [(1, (3,))]
    out = tmp_path / "r.jsonl"
    out.write_bytes(as_line(RESULT))
    (tmp_path / "r.jsonl.settings.json").write_bytes(BOM + b'{"method": "tog"}')
    assert read_json_object(tmp_path / "r.jsonl.settings.json") == {"method": "tog"}
    check_settings(out, {"method": "tog"}, force=False)  # the same settings: resumable
    (tmp_path / "r.jsonl.settings.json").write_bytes(b'{"method": ')
    with pytest.raises(InputError, match=r"r.jsonl.settings.json: not a readable JSON file"):
        check_settings(out, {"method": "tog"}, force=False)


def test_a_header_opening_an_unclosed_quote_is_one_line(tmp_path):
    """Found by the fuzzing above: the quoted field runs to the file's end, newline and all,
    and the missing-column message printed it raw (two lines)."""
    from adapath.sources.tables import read_table

    path = tmp_path / "nodes.csv"
    path.write_text('node_index,"node_name\n0,a\n')
    with pytest.raises(InputError) as caught:
        read_table(path, ["node_index", "node_name"])
    assert "\n" not in str(caught.value) and "missing column(s) node_name" in str(caught.value)
