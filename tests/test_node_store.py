"""Node-embedding stores: `kg embed` once, read by memory map, on-demand rows written in place,
resumable, stale or foreign stores refused, caches out of a read-only graph folder."""

import json
import os
import stat

import numpy as np
import pytest

from adapath.errors import InputError
from adapath.retrieval import node_store
from adapath.retrieval.bm25 import GraphText
from adapath.retrieval.cache_dir import ENV
from adapath.retrieval.dense import HashingEncoder, NodeEmbeddings
from adapath.retrieval.node_store import NodeStore, embed_all, expected_header, store_name
from tests.conftest import run_cli
from tests.helpers import random_graph


class CountingEncoder(HashingEncoder):
    """The hashing encoder, counting the texts it is asked to encode."""

    def __init__(self):
        super().__init__(dim=32)
        self.texts = 0

    def encode(self, texts):
        self.texts += len(texts)
        return super().encode(texts)


def reference(graph, encoder, nodes):
    """By hand: a node's text is its name, a space and the first 300 description characters."""
    texts = [f"{graph.name(i)} {graph.description(i)[:300]}".strip() for i in nodes]
    return HashingEncoder(encoder.dim).encode(texts)


@pytest.fixture(autouse=True)
def no_cache_env(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))


def test_on_demand_rows_match_encoder_and_persist(tmp_path):
    graph = random_graph(1)
    encoder = CountingEncoder()
    first = NodeEmbeddings(graph, encoder, tmp_path)
    got = first.get([3, 5, 3])
    assert np.allclose(got, reference(graph, encoder, [3, 5, 3]), atol=1e-6)
    assert encoder.texts == 2  # each new node once
    again = NodeEmbeddings(graph, encoder, tmp_path)
    assert np.array_equal(again.get([5, 3]), got[[1, 0]])
    assert encoder.texts == 2  # read back, not re-encoded
    assert not again.precomputed


def test_on_demand_writes_only_the_new_rows(tmp_path, monkeypatch):
    graph = random_graph(2, n=500, m=1500)
    encoder = CountingEncoder()
    writes = []
    real_pwrite = os.pwrite
    monkeypatch.setattr(node_store.os, "pwrite", lambda fd, data, offset: writes.append(len(data))
                        or real_pwrite(fd, data, offset))
    nodes = NodeEmbeddings(graph, encoder, tmp_path)
    nodes.get([10, 11, 12, 40])
    path = tmp_path / "cache" / store_name(encoder.name)
    inode = (path / "vectors.npy").stat().st_ino
    row = encoder.dim * 4
    assert sum(writes) == 4 * row + 4  # four rows and four done flags, not 500 rows
    writes.clear()
    nodes.get([10, 11, 41, 12])
    assert sum(writes) == row + 1  # only node 41 is new
    nodes.flush()
    assert sum(writes) == row + 1
    assert (path / "vectors.npy").stat().st_ino == inode  # updated in place, never rewritten
    done = np.load(path / "done.npy")
    assert sorted(np.flatnonzero(done).tolist()) == [10, 11, 12, 40, 41]


def test_embed_all_resumes_after_interruption(tmp_path):
    graph = random_graph(3, n=60, m=200)
    expect = expected_header(graph, "hashing-32")
    path = tmp_path / "store"
    encoder = CountingEncoder()

    def stop_after_two_chunks(progress):
        if progress.done >= 14:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        embed_all(graph, encoder, path, expect, "float32", chunk=7, on_progress=stop_after_two_chunks)
    assert encoder.texts == 14
    assert int(np.load(path / "done.npy").sum()) == 14
    rerun = CountingEncoder()
    progress = embed_all(graph, rerun, path, expect, "float32", chunk=7)
    assert rerun.texts == 60 - 14 and progress.done == 60 and progress.encoded == 46
    store = NodeStore.open(path, expect)
    assert store.complete
    assert np.allclose(store.rows(np.arange(60)), reference(graph, encoder, range(60)), atol=1e-6)


def test_float16_store_holds_rounded_vectors(tmp_path):
    graph = random_graph(4)
    encoder = HashingEncoder(dim=32)
    expect = expected_header(graph, encoder.name)
    embed_all(graph, encoder, tmp_path / "s", expect, "float16", chunk=16)
    store = NodeStore.open(tmp_path / "s", expect)
    assert store.vectors.dtype == np.float16
    want = reference(graph, encoder, range(graph.num_nodes)).astype(np.float16).astype(np.float32)
    assert np.array_equal(store.rows(np.arange(graph.num_nodes)), want)


def test_precomputed_store_is_read_by_memory_map_without_encoding(tmp_path, capsys):
    graph = random_graph(5)
    encoder = HashingEncoder(dim=32)
    embed_all(graph, encoder, tmp_path / "cache" / store_name(encoder.name),
              expected_header(graph, encoder.name), "float32")
    counting = CountingEncoder()
    nodes = NodeEmbeddings(graph, counting, tmp_path)
    assert nodes.precomputed
    assert isinstance(nodes.own.vectors, np.memmap)
    assert np.allclose(nodes.get([1, 2]), reference(graph, encoder, [1, 2]), atol=1e-6)
    assert counting.texts == 0
    assert "on demand" not in capsys.readouterr().err


def test_fallback_is_announced_once(tmp_path, capsys):
    graph = random_graph(6)
    nodes = NodeEmbeddings(graph, HashingEncoder(dim=16), tmp_path)
    nodes.get([1])
    nodes.get([2])
    NodeEmbeddings(graph, HashingEncoder(dim=16), tmp_path).get([3])
    err = capsys.readouterr().err
    assert err.count("encoding node texts on demand") == 1
    assert "adapath kg embed" in err


@pytest.mark.parametrize("field,value,words", [
    ("graph_checksum", "0" * 32, "stale"), ("text_checksum", "0" * 32, "stale"),
    ("encoder", "st-other", "encoder"),
])
def test_stale_or_foreign_store_is_refused(tmp_path, field, value, words):
    graph = random_graph(7)
    encoder = HashingEncoder(dim=16)
    path = tmp_path / "cache" / store_name(encoder.name)
    embed_all(graph, encoder, path, expected_header(graph, encoder.name), "float32")
    header = json.loads((path / "store.json").read_text())
    header[field] = value
    (path / "store.json").write_text(json.dumps(header))
    with pytest.raises(InputError, match=words) as info:
        NodeEmbeddings(graph, encoder, tmp_path)
    assert "\n" not in str(info.value)


def _read_only(path):
    for root, _, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(root, name), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(root, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def _writable(path):
    for root, _, files in os.walk(path):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def _tree(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_read_only_graph_caches_in_user_cache(tmp_path, capsys):
    graph = random_graph(8)
    kg = tmp_path / "kg"
    kg.mkdir()
    _read_only(kg)
    try:
        text = GraphText.for_graph(graph, kg, b=0.0)
        nodes = NodeEmbeddings(graph, HashingEncoder(dim=16), kg)
        nodes.get([1, 2])
        assert _tree(kg) == []  # nothing written into the graph folder
        user = tmp_path / "user-cache" / "adapath" / f"kg-{graph.checksum()[:12]}"
        assert (user / store_name("hashing-16") / "store.json").is_file()
        assert any(p.name.startswith("bm25-") for p in user.iterdir())
        assert "read-only" in capsys.readouterr().err
        again = GraphText.for_graph(graph, kg, b=0.0)  # served from the user cache
        assert np.array_equal(again.nodes.matrix.toarray(), text.nodes.matrix.toarray())
    finally:
        _writable(kg)


def test_store_precomputed_in_a_graph_made_read_only_is_used(tmp_path):
    graph = random_graph(9)
    kg = tmp_path / "kg"
    encoder = HashingEncoder(dim=16)
    embed_all(graph, encoder, kg / "cache" / store_name(encoder.name), expected_header(graph, encoder.name),
              "float32")
    before = _tree(kg)
    _read_only(kg)
    try:
        counting = CountingEncoder()
        counting.dim, counting.name = 16, encoder.name
        nodes = NodeEmbeddings(graph, counting, kg)
        assert nodes.precomputed and nodes.base is not None
        assert np.allclose(nodes.get([0, 4]), reference(graph, encoder, [0, 4]), atol=1e-6)
        assert counting.texts == 0
        assert _tree(kg) == before
    finally:
        _writable(kg)


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    graph = random_graph(10)
    kg, shared = tmp_path / "kg", tmp_path / "shared-cache"
    kg.mkdir()
    monkeypatch.setenv(ENV, str(shared))
    GraphText.for_graph(graph, kg, b=0.0)
    NodeEmbeddings(graph, HashingEncoder(dim=16), kg).get([1])
    place = shared / f"kg-{graph.checksum()[:12]}"
    assert (place / store_name("hashing-16") / "store.json").is_file()
    assert any(p.name.startswith("bm25-") for p in place.iterdir())
    assert _tree(kg) == []


def test_unwritable_explicit_cache_dir_is_a_clear_error(tmp_path):
    graph = random_graph(11)
    locked = tmp_path / "locked"
    locked.mkdir()
    _read_only(locked)
    try:
        nodes = NodeEmbeddings(graph, HashingEncoder(dim=16), tmp_path / "kg", cache_dir=locked)
        with pytest.raises(InputError, match="not writable"):
            nodes.get([1])
    finally:
        _writable(locked)


def test_kg_embed_cli(tmp_path, capsys, monkeypatch):
    from adapath.sources.synthetic import generate

    monkeypatch.setenv("ADAPATH_PROGRESS_INTERVAL", "0")  # a log line per chunk

    generate(scale=0.005, seed=4).save(tmp_path / "kg")
    code, _, err = run_cli(["kg", "embed", "--kg", tmp_path / "kg", "--encoder", "hashing", "--batch", "50",
                            "--dtype", "float16"], capsys)
    assert code == 0, err
    assert "kg embed:" in err and "texts/s" in err  # plain progress lines when stderr is no terminal
    assert "texts (100%)" in err
    path = tmp_path / "kg" / "cache" / "emb-hashing-512-300"
    header = json.loads((path / "store.json").read_text())
    assert header["dtype"] == "float16" and np.load(path / "done.npy").all()
    code, _, err = run_cli(["kg", "embed", "--kg", tmp_path / "kg", "--encoder", "hashing"], capsys)
    assert code == 0 and "complete already" in err
    code, _, err = run_cli(["kg", "embed", "--kg", tmp_path / "kg", "--encoder", "hashing", "--dtype",
                            "float32"], capsys)
    assert code == 2 and "--force" in err and len(err.strip().splitlines()) == 1
    header["graph_checksum"] = "f" * 32
    (path / "store.json").write_text(json.dumps(header))
    code, _, err = run_cli(["kg", "embed", "--kg", tmp_path / "kg", "--encoder", "hashing"], capsys)
    assert code == 2 and "stale" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["kg", "embed", "--kg", tmp_path / "kg", "--encoder", "hashing", "--force"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["kg", "embed", "--kg", tmp_path / "kg", "--encoder", "hashing", "--device", "tpu"],
                           capsys)
    assert code == 2 and "--device" in err


def test_embed_target_finds_resumes_and_forces(tmp_path):
    """Where `kg embed` writes: a new store in the graph's cache/, a partial one resumed in its
    own dtype, another dtype refused, --force starting over, a read-only store left in place."""
    from adapath.retrieval.cache_dir import GraphCache
    from adapath.retrieval.node_store import embed_target

    graph, encoder = random_graph(12), HashingEncoder(dim=16)
    kg = tmp_path / "kg"
    places = GraphCache(kg, graph.checksum())
    own = kg / "cache" / "emb-hashing-16-300"
    target = embed_target(graph, encoder.name, places)
    assert (target.path, target.dtype, target.complete) == (own, "float32", False)
    assert target.expect == expected_header(graph, encoder.name)
    with pytest.raises(InputError, match="--dtype 'float64': choose float32 or float16"):
        embed_target(graph, encoder.name, places, dtype="float64")
    store = NodeStore.create(own, target.expect, 16, "float16")  # a partial float16 store
    store.write(np.array([0, 1]), np.ones((2, 16)))
    store.close()
    resumed = embed_target(graph, encoder.name, places)
    assert (resumed.path, resumed.dtype, resumed.complete) == (own, "float16", False)
    with pytest.raises(InputError, match="holds float16; pass --force to rebuild it as float32"):
        embed_target(graph, encoder.name, places, dtype="float32")
    embed_all(graph, encoder, own, target.expect, "float16")
    assert embed_target(graph, encoder.name, places).complete
    forced = embed_target(graph, encoder.name, places, dtype="float32", force=True)
    assert (forced.path, forced.dtype, forced.complete) == (own, "float32", False) and not own.exists()
    embed_all(graph, encoder, own, target.expect, "float32")
    _read_only(kg / "cache")
    try:  # a store nobody may remove stays; the new one goes to the user's cache
        elsewhere = embed_target(graph, encoder.name, places, force=True)
        assert own.is_dir() and elsewhere.path == (tmp_path / "user-cache" / "adapath" /
                                                   f"kg-{graph.checksum()[:12]}" / "emb-hashing-16-300")
    finally:
        _writable(kg / "cache")


def test_answers_with_precomputed_store_equal_on_demand(tmp_path):
    import shutil

    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.index import BankIndex
    from adapath.datasets.biostrat import query_from_record, training_queries
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.adapath import AdaPath, AdaPathConfig
    from adapath.sources.synthetic import generate

    generate(scale=0.02, seed=21).save(tmp_path / "on-demand")
    shutil.copytree(tmp_path / "on-demand", tmp_path / "precomputed")
    graph = KnowledgeGraph.load(tmp_path / "on-demand")
    generator = QueryGenerator(graph)
    train, test = generator.generate(60, seed=1), generator.generate(16, seed=2, first_id=1000)
    build_bank(graph, training_queries(train), tmp_path / "bank", BankConfig())
    queries = [query_from_record(r, "explicit") for r in test]
    results = {}
    for name in ("on-demand", "precomputed"):
        encoder = CountingEncoder()
        if name == "precomputed":
            embed_all(graph, encoder, tmp_path / name / "cache" / store_name(encoder.name),
                      expected_header(graph, encoder.name), "float32", chunk=500)
            encoder.texts = 0
        # the paper's beam (AdaPathConfig's defaults when this test was written)
        config = AdaPathConfig(scorer="beam", control="filter", metapaths=3)
        pipeline = AdaPath(graph, BankIndex(tmp_path / "bank", encoder), encoder, None, config,
                           graph_dir=tmp_path / name)
        results[name] = pipeline.answer(queries[:8]) + pipeline.answer(queries[8:])
        if name == "precomputed":
            assert pipeline.nodes.precomputed and encoder.texts == 16  # the questions only
        else:
            assert pipeline.nodes.encoded > 0
    assert any(r.answer for r in results["on-demand"])
    for a, b in zip(results["on-demand"], results["precomputed"]):
        a, b = a.to_json(), b.to_json()
        a.pop("usage"), b.pop("usage")
        assert a == b


def test_cache_dir_flag_serves_a_read_only_graph(tmp_path, capsys, monkeypatch):
    """bank build and answer on a graph folder nobody may write: --cache-dir takes the caches."""
    import json
    import stat

    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph
    from adapath.retrieval.cache_dir import ENV
    from adapath.sources.synthetic import generate
    from tests.conftest import run_cli

    monkeypatch.setenv(ENV, "")  # restored after the test: --cache-dir sets it for the run
    kg = tmp_path / "kg"
    generate(scale=0.01, seed=3).save(kg)
    records = QueryGenerator(KnowledgeGraph.load(kg)).generate(12, seed=1)
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    mode = kg.stat().st_mode
    kg.chmod(stat.S_IREAD | stat.S_IEXEC)
    try:
        caches = tmp_path / "caches"
        code, _, err = run_cli(["bank", "build", "--kg", kg, "--queries", f"biostrat:{tmp_path / 'q.jsonl'}",
                                "--out", tmp_path / "bank", "--cache-dir", caches], capsys)
        assert code == 0, err
        code, _, err = run_cli(["answer", "--kg", kg, "--bank", tmp_path / "bank", "--queries",
                                f"biostrat:{tmp_path / 'q.jsonl'}", "--encoder", "hashing", "--out",
                                tmp_path / "a.jsonl", "--cache-dir", caches, "--limit", "3"], capsys)
        assert code == 0, err
    finally:
        kg.chmod(mode)
    assert not (kg / "cache").exists()
    written = [p.name for p in caches.rglob("*") if p.is_file()]
    assert any("bm25" in name or name.endswith(".npz") for name in written), written
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 3



def test_store_closes_its_files_once_and_at_exit(tmp_path):
    """close() releases both descriptors, a second close is harmless, and the closing is an
    exit-time finalizer (it runs before the modules are torn down, where a __del__ could find
    ``os`` gone)."""
    import weakref

    embeddings = NodeEmbeddings(random_graph(1), HashingEncoder(dim=8), tmp_path)
    embeddings.get([1, 2])
    store = embeddings.own
    fds = store._fds
    assert fds is not None and all(os.fstat(fd) for fd in fds)
    assert isinstance(store._closer, weakref.finalize) and store._closer.atexit
    store.close()
    store.close()
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)
