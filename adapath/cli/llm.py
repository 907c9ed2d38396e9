"""`adapath llm serve`: one loaded model behind an OpenAI-compatible HTTP endpoint."""

from __future__ import annotations

import typer

from adapath.cli.common import LLM_OPTION_HELP, command_group, make_llm, say
from adapath.errors import InputError

llm_app = command_group("Serve an LLM backend to other runs.")


@llm_app.command("serve")
def llm_serve(
    llm: str = typer.Option(..., "--llm", help="The backend to serve: vllm:MODEL | openai:URL#MODEL | hf:PATH | gguf:PATH."),
    port: int = typer.Option(8000, "--port", help="TCP port (0: a free one, printed at start)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default loopback only; beyond it, set --api-key)."),
    api_key: str | None = typer.Option(None, "--api-key", envvar="ADAPATH_API_KEY", show_envvar=True,
                                       help="Require Authorization: Bearer KEY on every request (else 401); "
                                            "clients pass it with --llm-option api_key=KEY or OPENAI_API_KEY."),
    name: str = typer.Option("adapath", "--name", help="The model name clients give: --llm openai:http://HOST:PORT/v1#NAME."),
    llm_option: list[str] = typer.Option([], "--llm-option", metavar="KEY=VALUE", help=LLM_OPTION_HELP),
    device: str | None = typer.Option(None, "--device", help="Device of the hf: backend: cpu (default), cuda, cuda:N or mps."),
    max_batch: int = typer.Option(64, "--max-batch", help="Most prompts handed to the backend in one call."),
    batch_wait_ms: float = typer.Option(5.0, "--batch-wait-ms", help="How long to gather requests into one batch (ms)."),
) -> None:
    """Serve /v1/chat/completions and /v1/models over any adapath backend until Ctrl-C."""
    from adapath.llm.serve import exposure_warning, make_server

    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: expected 0 to 65535")
    if max_batch < 1 or batch_wait_ms < 0:
        raise InputError("--max-batch must be at least 1 and --batch-wait-ms at least 0")
    if llm == "none":
        raise InputError("--llm none: there is nothing to serve")
    backend = make_llm(llm, llm_option, device)
    try:
        server = make_server(backend, host, port, name, max_batch=max_batch, wait=batch_wait_ms / 1000,
                             api_key=api_key or None)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    warning = exposure_warning(host, api_key)
    if warning:
        say(warning)
    shown = f"[{host}]" if ":" in host else host
    say(f"serving {llm} as {name!r} on http://{shown}:{server.server_port}/v1 "
        f"(clients: --llm openai:http://{shown}:{server.server_port}/v1#{name}"
        f"{' with --llm-option api_key=KEY or OPENAI_API_KEY' if api_key else ''}); Ctrl-C stops")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        say("stopped")
    finally:
        server.server_close()
