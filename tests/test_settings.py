"""Every setting has one home, its config dataclass: `adapath answer` runs each method with a
config equal to its dataclass's defaults (a variant's stated ones for pog-d3 and
structgpt-d2), and the options of `bank build` and `pathmind train` default to BankConfig's
and TrainConfig's values."""

import dataclasses

import pytest
import typer

from adapath.bank.config import BankConfig
from adapath.contract import Result
from adapath.methods.adapath import AdaPathConfig
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pog import PoGConfig
from adapath.methods.registry import all_methods
from adapath.methods.structgpt import StructGPTConfig
from adapath.methods.tog import ToGConfig
from adapath.methods.tog2 import ToG2Config
from tests.conftest import run_cli

# What each method with a config runs with no --param given, with --llm (adapath without one too).
EXPECTED = {
    "adapath": AdaPathConfig().resolved(with_llm=True),
    "tog": ToGConfig(), "tog2": ToG2Config(), "pog": PoGConfig(),
    "pog-d3": PoGConfig(max_depth=3, max_tokens=512),
    "structgpt": StructGPTConfig(), "structgpt-d2": StructGPTConfig(max_depth=2),
}


class Stub:
    """Stands in for the built method once its config is taken: answers without work."""

    name = "stub"

    def answer(self, queries):
        return [Result(q.id, q.level, "") for q in queries]


def built_config(name, root, tmp_path, capsys, monkeypatch, llm: bool):
    """The config of the method `adapath answer --method NAME` builds (no --param)."""
    import adapath.llm
    import adapath.methods.registry as registry
    from adapath.llm import ScriptedBackend

    built = []
    real = registry.get_method

    def capturing(method):
        spec = real(method)
        return dataclasses.replace(spec, build=lambda context: built.append(spec.build(context)) or Stub())

    monkeypatch.setattr(registry, "get_method", capturing)
    monkeypatch.setattr(adapath.llm, "make_backend", lambda spec, *args, **kw: ScriptedBackend(default="{x}")
                        if spec != "none" else None)
    args = ["answer", "--method", name, "--kg", root / "kg", "--bank", root / "bank", "--queries",
            f"biostrat:{root / 'q.jsonl'}", "--out", tmp_path / f"{name}.jsonl", "--encoder", "hashing",
            "--limit", "1", "--llm", "openai:http://127.0.0.1:9/v1#scripted" if llm else "none"]
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    (method,) = built
    return method.config


def test_every_method_with_a_config_is_checked_here():
    assert {name for name, spec in all_methods().items() if spec.config is not None} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_answer_runs_the_configs_defaults(name, small_world, tmp_path, capsys, monkeypatch):
    assert built_config(name, small_world, tmp_path, capsys, monkeypatch, llm=True) == EXPECTED[name]


def test_answer_without_an_llm_runs_adapaths_defaults(small_world, tmp_path, capsys, monkeypatch):
    config = built_config("adapath", small_world, tmp_path, capsys, monkeypatch, llm=False)
    assert config == AdaPathConfig().resolved(with_llm=False)
    # the settings the bench figures were measured with: the walk scorer over 8 meta-paths of
    # 10 retrieved training queries, weighed by the vote; with an LLM the paper's beam of 3 of 5
    assert (config.scorer, config.metapaths, config.retrieve, config.control) == ("walk", 8, 10, "weigh")
    assert (EXPECTED["adapath"].scorer, EXPECTED["adapath"].metapaths, EXPECTED["adapath"].retrieve) == ("beam", 3, 5)


def options(*path):
    from adapath.cli import app

    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {p.name: p for p in command.params if p.param_type_name == "option"}


@pytest.mark.parametrize("path, kind", [(("bank", "build"), BankConfig), (("pathmind", "train"), TrainConfig)])
def test_command_line_options_default_to_the_config(path, kind):
    given = options(*path)
    fields = {f.name: f for f in dataclasses.fields(kind)}
    shared = sorted(set(given) & set(fields))
    assert len(shared) >= 6
    for name in shared:
        default = fields[name].default
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        assert given[name].default == shown, name
        if "help" in fields[name].metadata:  # --encoder's help is every command's one text
            assert given[name].help == fields[name].metadata["help"], name


def test_bank_defaults_are_the_papers_and_the_engines():
    """Table 17's construction settings, which the engine's functions take by default too."""
    from adapath.engine.corridor import LADDER
    from adapath.engine.paths import ALPHA, RELATION_SEQUENCES
    from adapath.engine.ppr import ETA, TOL
    from adapath.engine.weights import BETA, EPS

    config = BankConfig()
    assert (config.beta, config.eta, config.ladder, config.alpha, config.per_hop, config.max_hop) == \
        (0.3, 0.85, (150, 300, 500, 1000), 0.5, 5, 5)
    assert (config.beta, config.eps, config.eta, config.tol, config.ladder, config.alpha,
            config.relation_sequences) == (BETA, EPS, ETA, TOL, LADDER, ALPHA, RELATION_SEQUENCES)
