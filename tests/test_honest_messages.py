"""Messages say only what is true: after an LLM failure, "finished results are kept in F" only
when F exists and holds results."""

import json
import socket

from tests.conftest import run_cli
from tests.test_result_files import answer_args, io_world  # noqa: F401 - the served tiny world


def dead_port():
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_server_from_the_start_claims_no_kept_file(io_world, tmp_path, capsys):  # noqa: F811
    root, _ = io_world
    out = tmp_path / "tog.jsonl"
    code, _, err = run_cli(answer_args(root, out, "openai:http://127.0.0.1:9/v1#x"), capsys)
    assert code == 2 and "LLM backend failed" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    assert "kept" not in err and str(out) not in err


def test_results_kept_are_named_with_their_count(io_world, tmp_path, capsys):  # noqa: F811
    """Two results finished with a live server; the server is gone when the run resumes."""
    root, server = io_world
    out = tmp_path / "io.jsonl"
    live = answer_args(root, out, f"openai:http://127.0.0.1:{server.server_port}/v1#s")
    code, _, err = run_cli(live + ["--limit", "2"], capsys)
    assert code == 0, err
    port = dead_port()
    settings = out.with_name(out.name + ".settings.json")
    # the same settings, pointed at a dead port: the resumed run fails on its first new question
    data = json.loads(settings.read_text())
    data["llm"] = f"openai:http://127.0.0.1:{port}/v1#s"
    settings.write_text(json.dumps(data))
    code, _, err = run_cli(answer_args(root, out, data["llm"]), capsys)
    assert code == 2 and "LLM backend failed" in err, err
    assert f"2 finished results are kept in {out}" in err
    assert len(out.read_text().splitlines()) == 2


def test_an_interrupt_before_any_result_names_no_file(tmp_path):
    from adapath.contract import Query
    from adapath.methods.run import Interrupted, run_queries

    class Stops:
        def answer(self, queries):
            raise KeyboardInterrupt

    out = tmp_path / "x.jsonl"
    try:
        run_queries(Stops, [Query("1", "explicit", "q?", (1,))], out)
    except Interrupted as exc:
        message = str(exc)
    assert not out.exists()
    assert message == "interrupted before any result was finished; nothing was written"
