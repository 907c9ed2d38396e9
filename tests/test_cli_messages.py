"""What the command line says when a user gets something wrong, or when there is nothing to do:
one line, at once, naming what would have been right."""

import socket
import time

import pytest

from tests.conftest import run_cli


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("tried the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


@pytest.mark.parametrize("command", [
    ["answer", "--kg", "kg", "--queries", "biostrat:q.jsonl", "--out", "a.jsonl"],
    ["kg", "embed", "--kg", "kg"],
    ["dataset", "topics", "--kg", "kg", "--out", "t.jsonl", "--stark", "q.csv"],
])
def test_an_unknown_encoder_fails_at_once_offline_naming_the_valid_ones(command, no_network, tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)  # no kg/ here: the encoder is refused before anything is read
    start = time.perf_counter()
    code, _, err = run_cli(command + ["--encoder", "hashng"], capsys)
    assert time.perf_counter() - start < 2.0
    assert code == 2 and err.count("\n") == 1, err
    assert "'hashng'" in err and "minilm" in err and "hashing" in err and "model directory" in err


def test_a_model_directory_is_accepted_as_an_encoder(tmp_path):
    from adapath.errors import InputError
    from adapath.retrieval.dense import check_encoder

    check_encoder("hashing")
    check_encoder("minilm")
    check_encoder(str(tmp_path))  # a directory: sentence-transformers says whether it holds a model
    with pytest.raises(InputError):
        check_encoder(str(tmp_path / "absent"))
