"""The benches' PathMind model names: ``key=value`` settings read as the numbers they are, and
every named model a valid training configuration."""

import pytest

from adapath.bench.pathmind_models import MODELS, model_settings
from adapath.errors import InputError
from adapath.methods.pathmind.config import TrainConfig


def test_settings_read_as_their_fields_types():
    settings = model_settings("nodes=32+degree_ratio=2.5+message=mul+answer_type=1+entity_text=0")
    assert settings == {"nodes": 32, "degree_ratio": 2.5, "message": "mul", "answer_type": 1, "entity_text": False}
    assert [type(settings[k]) for k in ("nodes", "degree_ratio", "answer_type", "entity_text")] == [int, float, bool, bool]
    assert type(model_settings("degree_ratio=0")["degree_ratio"]) is float


@pytest.mark.parametrize("entry", ["nodes=many", "no_such_setting=3", "answer_type=maybe"])
def test_a_bad_setting_is_a_one_line_error(entry):
    with pytest.raises(InputError) as error:
        model_settings(entry)
    assert "\n" not in str(error.value) and entry.split("=")[0] in str(error.value)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_named_model_is_a_valid_configuration(name):
    config = TrainConfig(**model_settings(name))
    config.check()
    for key, value in MODELS[name].items():
        if config.network == "bellman-ford" or key not in ("entity_text", "answer_type", "answer_text"):
            assert getattr(config, key) == value


def test_failure_table_names_why_each_miss_missed_on_a_hand_worked_graph():
    """The hand graph (square 0-1-2-3 with the diagonal 0-2, pendant 4 on 3; types 0 1 1 0 1):
    from topic 4 the depths are 4:0, 3:1, 0:2, 2:2, 1:3; from topic 0, 1, 2 and 3 are at
    depth 1. Each question's K selected entities, and the reason worked out by hand."""
    from types import SimpleNamespace

    from adapath.bench.pathmind_real import FAILURES, failure_table, reach_table
    from tests.test_pathmind import hand_graph

    records = [{"data_id": "far", "num_hops": 3, "topic_entities": [4], "valid_answer_ids": [1]},
               {"data_id": "near", "num_hops": 1, "topic_entities": [0], "valid_answer_ids": [1]}]
    cases = [  # (record, selected, explored, reached, why)
        ("far", [1], [], True, None),  # a hit
        ("far", [2], [], True, "answer's type, another depth"),  # type 1 at depth 2, the answer at 3
        ("far", [2], [], False, "no answer reached by the search"),
        ("far", [3, 0], [], True, "another type"),
        ("far", [3], [1], False, "an answer selected, outranked in the final K"),
        ("near", [2], [], True, "a rival: answer's type and depth"),  # type 1 at depth 1, as the answer
    ]
    results = [SimpleNamespace(id=rid, level=f"l{i}", extra={"prioritized": chosen}, explored={"1": explored})
               for i, (rid, chosen, explored, _, _) in enumerate(cases)]
    reached = {(rid, f"l{i}"): hit for i, (rid, _, _, hit, _) in enumerate(cases)}
    table = failure_table(hand_graph(), records, results, k=3, reached=reached)
    want = {"3": {"questions": 5, "misses": 4} | dict.fromkeys(FAILURES, 0),
            "1": {"questions": 1, "misses": 1} | dict.fromkeys(FAILURES, 0)}
    for rid, _, _, _, why in cases:
        if why:
            want["3" if rid == "far" else "1"][why] += 1
    assert table == want
    assert reach_table(records, reached) == {"1": 100.0, "3": 60.0}


def test_guide_paths_without_pruning_is_a_one_line_error():
    with pytest.raises(InputError) as error:
        TrainConfig(nodes=0, guide_paths=True).check()
    assert "\n" not in str(error.value) and "--guide-paths" in str(error.value)
    TrainConfig(nodes=8, guide_paths=True).check()


@pytest.mark.parametrize("models, says", [("default,bogus=1", "'bogus' is neither a model name"),
                                          (",", "none given"), ("nodes=many", "nodes")])
def test_bench_pathmind_default_reads_its_models_as_the_real_bench_does(models, says):
    """Names or key=value settings; a bad entry is one line before any work."""
    from adapath.bench import pathmind_default

    with pytest.raises(InputError) as error:
        pathmind_default.main(["--models", models])
    assert "\n" not in str(error.value) and says in str(error.value)


def test_model_names_keeps_the_entries_in_order_and_checks_each():
    from adapath.bench.pathmind_models import model_names

    assert model_names(" default, nodes=16+message=mul ,,mul") == ["default", "nodes=16+message=mul", "mul"]
    with pytest.raises(InputError) as error:
        model_names("default,nodes=16+colour=red")
    assert "\n" not in str(error.value) and "'colour'" in str(error.value)


def test_a_network_with_and_without_its_reader_shares_one_folder(tmp_path):
    """The reader is fitted after training into the network's folder: a name with rerank=1 reads
    the folder of the same name without it, and only that name answers through the reader."""
    from adapath.bench.pathmind_real import model_dir, reading

    plain, read = (TrainConfig(**model_settings(n)) for n in ("rerank=0", "default"))
    assert model_dir(tmp_path, "test", plain) == model_dir(tmp_path, "test", read)
    assert model_dir(tmp_path, "test", plain) != model_dir(tmp_path, "test", TrainConfig(**model_settings("answer_type=0")))
    assert reading("rerank=0") == {"rerank": 0}
    assert reading("default") == {"rerank": 1}  # the default answers through its reader
    assert reading("network") == {"rerank": 0} and reading("network+rerank=1") == {"rerank": 1}


def test_names_measured_before_the_prior_became_default_keep_their_folders(tmp_path):
    """Each name's settings in full against the default before issue 50's decision (the network
    alone: no prior, no wh-phrase, the sampled loss, no reader), and the default's folder is the
    one its settings spelled out named then: the models kept before resolve as they did."""
    from adapath.bench.pathmind_real import model_dir

    before = {"answer_type": False, "answer_text": False, "focus": False, "negatives": "sampled", "rerank": False}
    for name, then in [("mul", {"nodes": 32, "message": "mul"}), ("answer-prior", {"nodes": 32, "answer_type": True,
                       "answer_text": True}), ("focus", {"focus": True}), ("all-negatives", {"negatives": "all"}),
                       ("unpruned", {"nodes": 0}), ("network", {})]:
        config = TrainConfig(**model_settings(name))
        assert {k: getattr(config, k) for k in before | then} == before | then, name
    spelled = TrainConfig(**model_settings("network+answer_type=1+answer_text=1+focus=1+negatives=all+rerank=1"))
    assert model_dir(tmp_path, "test", spelled) == model_dir(tmp_path, "test", TrainConfig())
    assert model_settings("network+seed=2") == {**before, "seed": 2}


def test_answer_files_from_before_the_reader_resume_only_without_it():
    from adapath.methods.run import _same

    before = {"k": 3, "nodes": 0}
    assert _same("params", before, {"k": 3, "nodes": 0, "rerank": 0})
    assert not _same("params", before, {"k": 3, "nodes": 0, "rerank": 1})


def test_settings_added_later_read_as_before_only_at_their_old_value():
    from adapath.config import without_later

    later = {"focus": False, "negatives": "sampled"}
    assert without_later({"nodes": 64, "focus": False, "negatives": "all"}, later) == {"nodes": 64, "negatives": "all"}
    assert without_later({"nodes": 64, "focus": True, "negatives": "sampled"}, later) == {"nodes": 64, "focus": True}
