"""Training the reasoner: stage 1 SFT, stage 2 path-level DPO against the SFT model, both
with LoRA (peft) and trl's trainers.

Data (JSONL in trl's conversational formats), from PathMind's own selection on training
questions (gold answers are the targets):

- SFT: ``{"prompt": [user: the reasoning prompt inference sends, the question and the K
  prioritized paths], "completion": [assistant: the gold answer set, each name in braces]}``;
- DPO: ``{"prompt": [user: the question], "chosen": [assistant: the prioritized paths + the
  gold answers], "rejected": [assistant: remaining candidate paths of the subgraph (the
  runners-up the selection passed over, none ending at a valid answer) + their ends]}``.

Why DPO scores the path text: the preference PathMind expresses is between *paths* (the
prioritized ones over other candidates in the subgraph), so the completion DPO compares is
the reasoning path followed by the answer it leads to; SFT already teaches answering from
given paths.

DPO starts from the SFT adapter and is judged against it: the SFT adapter is loaded
trainable, trl copies it into a frozen reference adapter, and the result is one adapter on the
base model (``--llm-option adapter=DIR`` loads it).
"""

from __future__ import annotations

import json
from pathlib import Path

from adapath.datasets.biostrat import answer_names, query_from_record
from adapath.errors import InputError

PAPER_SFT_LR, PAPER_DPO_LR = 2e-5, 5e-6  # the paper's, for a full fine-tune of Llama-3.1-8B
# LoRA rank 8: SFT at 1e-3 put 98% of the replies in the answer format after 50 steps, the
# paper's 2e-5 none (docs/guide/pathmind.md, "The learning rate"); DPO keeps the paper's rate
SFT_LR, DPO_LR = 1e-3, PAPER_DPO_LR
DPO_BETA, EPOCHS = 0.1, 3
DEVICES = ("auto", "cpu", "cuda")
WARMUP_RATIO, MAX_LENGTH = 0.03, 2048  # a warm-up below 1 is a share of the steps (transformers 5)
LORA_TARGETS = ("q_proj", "v_proj")
STAGES = ("sft", "dpo")


def _path_text(paths: list[list[tuple]]) -> str:
    """Named paths as DPO's completions write them: each a chain from the topic as the
    reasoning prompt prints it (a step against its stored edge as ``<-[r]-``), joined by "; "."""
    from adapath.llm.prompts import path_chain

    return "; ".join(path_chain(p) for p in paths) or "(no path)"


def reasoner_examples(pathmind, records: list[dict], stage: str, level: str = "explicit", max_answers: int = 5,
                      chunk: int = 16, progress=None) -> list[dict]:
    """SFT or DPO rows from PathMind's selection on training records (``pathmind``: a
    :class:`~adapath.methods.pathmind.infer.PathMind` without an LLM)."""
    if stage not in STAGES:
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    graph = pathmind.graph
    rows = []
    for lo in range(0, len(records), chunk):
        part = records[lo:lo + chunk]
        queries = [query_from_record(r, level) for r in part]
        examples = pathmind.examples(queries)
        for record, query, example, prioritized in zip(part, queries, examples,
                                                       pathmind.prioritize(examples, queries)):
            selection = pathmind.select(example, prioritized)
            named = pathmind.named(pathmind.paths(selection, selection.final, prioritized))
            answers = answer_names(record, graph)
            target = " ".join(f"{{{a}}}" for a in answers[:max_answers])
            if stage == "sft":
                rows.append({"prompt": [{"role": "user", "content": pathmind.prompt(query.text, named)}],
                             "completion": [{"role": "assistant", "content": target}]})
                continue
            valid = set(graph.index_of([int(v) for v in record["valid_answer_ids"]], missing="ignore").tolist())
            passed = [v for v in selection.runners_up(prioritized.priority) if v not in valid]
            rejected = pathmind.named(pathmind.paths(selection, passed[:pathmind.k], prioritized))
            if not named or not rejected:
                continue
            ends = " ".join(f"{{{p[-1][2]}}}" for p in rejected)
            ask = f"{query.text}\nGive the knowledge-graph paths you reason along, then the answers in braces."
            rows.append({"prompt": [{"role": "user", "content": ask}],
                         "chosen": [{"role": "assistant", "content": f"{_path_text(named)} Answer: {target}"}],
                         "rejected": [{"role": "assistant", "content": f"{_path_text(rejected)} Answer: {ends}"}]})
        if progress is not None:
            progress.advance(len(part))
    return rows


def write_jsonl(rows: list[dict], out: str | Path) -> None:
    from adapath.fsutil import atomic_file

    with atomic_file(out) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def training_device(device: str = "auto"):
    """(device, dtype) fine-tuning runs on: ``auto`` takes CUDA when there is a GPU, else the
    CPU; on CUDA the base is bfloat16 (float16 where the GPU has no bfloat16), on the CPU
    float32. ``cuda`` without a GPU is an error, never a silent fall-back."""
    import torch

    if device not in DEVICES:
        raise InputError(f"--device {device!r}: choose {', '.join(DEVICES)}")
    gpu = torch.cuda.is_available()
    if device == "cuda" and not gpu:
        raise InputError("--device cuda: no CUDA device here (torch sees none)")
    if device == "cpu" or not gpu:
        return "cpu", torch.float32
    return "cuda", torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def precision_flags(device: str, dtype) -> dict:
    """The TrainingArguments of a device and base dtype: on CUDA mixed precision in the base's
    dtype; on the CPU a float32 base under bfloat16 autocast, trl's default, kept (3x faster
    per step than float32 on the 2-core development machine's AVX-512 BF16 CPU)."""
    import torch

    if device == "cpu":
        return {"use_cpu": True, "bf16": True, "fp16": False}
    return {"use_cpu": False, "bf16": dtype == torch.bfloat16, "fp16": dtype == torch.float16}


def load_base(base: str | Path, dtype=None, device: str = "cpu"):
    """(model, tokenizer) from a transformers directory or a ``.gguf`` file (de-quantized),
    the model in ``dtype`` (float32 when None) on ``device``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = Path(base)
    directory, kwargs = (base.parent, {"gguf_file": base.name}) if base.suffix == ".gguf" else (base, {})
    if kwargs:
        from adapath.quiet import quiet_gguf_loading

        quiet_gguf_loading()
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(directory), local_files_only=True, **kwargs)
    if kwargs:
        from adapath.llm.local import dequantized

        model = dequantized(model)
    if dtype is not None:
        model = model.to(dtype)
    return model.to(device), tokenizer


def make_trainer(base: str | Path, stage: str, data: str | Path, out: str | Path, epochs: int = EPOCHS,
                 lr: float | None = None, max_steps: int = -1, lora_rank: int = 8, batch_size: int = 2,
                 seed: int = 42, sft_adapter: str | Path | None = None, device: str = "auto"):
    """The trl trainer of a stage: SFT with a new LoRA adapter, its loss on the completion
    (the answer set) alone; DPO continuing ``sft_adapter`` against a frozen copy of it (the
    SFT model is the reference). ``device``: see :func:`training_device`."""
    try:
        from datasets import load_dataset
        from peft import LoraConfig, PeftModel
        from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer
    except ImportError:
        raise InputError("fine-tuning needs the train extra: pip install 'adapath[train]'") from None
    if stage not in STAGES:
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    if stage == "dpo" and sft_adapter is None:
        raise InputError("--stage dpo needs --sft-adapter DIR (DPO starts from the SFT model and is judged "
                         "against it)")
    import datasets

    from adapath.quiet import quiet_third_party

    quiet_third_party()
    datasets.disable_progress_bars()  # "Generating train split" and "Map" bars
    dataset = load_dataset("json", data_files=str(data), split="train")
    device, dtype = training_device(device)
    model, tokenizer = load_base(base, dtype, device)
    common = dict(output_dir=str(out), num_train_epochs=epochs, max_steps=max_steps,
                  per_device_train_batch_size=batch_size, logging_steps=1, save_strategy="no",
                  report_to=[], seed=seed, warmup_steps=WARMUP_RATIO, max_length=MAX_LENGTH,
                  **precision_flags(device, dtype))
    if stage == "sft":
        lora = LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=0.0, task_type="CAUSAL_LM",
                          target_modules=list(LORA_TARGETS))
        # the loss on the completion (the answer set) alone: the prompt's labels are masked
        args = SFTConfig(learning_rate=lr or SFT_LR, completion_only_loss=True, **common)
        return SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                          peft_config=lora)
    model = PeftModel.from_pretrained(model, str(sft_adapter), is_trainable=True)
    args = DPOConfig(learning_rate=lr or DPO_LR, beta=DPO_BETA, **common)
    return DPOTrainer(model=model, ref_model=None, args=args, train_dataset=dataset, processing_class=tokenizer)


def finetune(base: str | Path, stage: str, data: str | Path, out: str | Path, **options) -> list[dict]:
    """Train a stage and save its adapter in ``out``, with the project's progress lines on
    stderr (trl's own print each step's numbers to stdout). Returns the trainer's log history."""
    from transformers import ProgressCallback, TrainerCallback

    from adapath.progress import Progress

    class StepProgress(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.bar = Progress(state.max_steps, f"{stage} fine-tuning", "steps")
            self.bar.__enter__()

        def on_step_end(self, args, state, control, **kwargs):
            self.bar.advance()

        def on_train_end(self, args, state, control, **kwargs):
            self.bar.__exit__(None, None, None)

    trainer = make_trainer(base, stage, data, out, **options)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(StepProgress())
    trainer.train()
    model = trainer.model
    if stage == "dpo" and "ref" in getattr(model, "peft_config", {}):
        model.delete_adapter("ref")  # the frozen reference is not part of the result
    model.save_pretrained(str(out))
    (Path(out) / "adapath_reasoner.json").write_text(json.dumps(
        {"stage": stage, "base": str(base), "sft_adapter": str(options.get("sft_adapter") or "") or None,
         "learning_rate": trainer.args.learning_rate, "device": "cpu" if trainer.args.use_cpu else "cuda",
         "precision": "bf16" if trainer.args.bf16 else "fp16" if trainer.args.fp16 else "fp32"}, indent=2))
    from adapath.fsutil import give_created_modes

    give_created_modes(out)  # safetensors writes its files 0600
    return trainer.state.log_history
