"""Training the reasoner: stage 1 SFT, stage 2 path-level DPO, both with LoRA (peft) and
trl's trainers.

Data (JSONL in trl's conversational formats):

- SFT: ``{"prompt": [user: question + prioritized paths], "completion": [assistant: the answer
  set, each name in braces]}``.
- DPO: ``{"prompt": [user: question], "chosen": [assistant: prioritized paths + answer],
  "rejected": [assistant: other candidate paths of the subgraph + their end entity]}``.

Why DPO scores the path text: the preference PathMind expresses is between *paths* (the
prioritized ones over other candidates in the subgraph), so the completion that DPO compares
is the reasoning path followed by the answer it leads to. Scoring only the answer given fixed
paths would collapse to answer-level preference and leave the paths themselves untrained;
SFT already teaches answering from given paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from adapath.datasets.biostrat import answer_names
from adapath.errors import InputError
from adapath.llm import prompts

SFT_LR, DPO_LR, DPO_BETA, EPOCHS = 2e-5, 5e-6, 0.1, 3


def _path_text(paths: list[list[tuple[str, str, str]]]) -> str:
    return " ".join("; ".join(f"({h}, {r}, {t})" for h, r, t in p) for p in paths) or "(no path)"


def reasoner_examples(graph, records: list[dict], results: list[dict], stage: str, seed: int = 0,
                      max_answers: int = 5) -> list[dict]:
    """SFT or DPO rows from PathMind results on training records (gold answers are the targets)."""
    if stage not in ("sft", "dpo"):
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    rng = np.random.default_rng(seed)
    by_id = {str(r["data_id"]): r for r in records}

    rows = []
    for result in results:
        record = by_id[str(result["id"])]
        answers = answer_names(record, graph)
        target = " ".join(f"{{{a}}}" for a in answers[:max_answers])
        paths = [[t for t in graph.named_triplets(p) if t is not None] for p in result["paths"]]
        question = record[f"{result.get('level', 'explicit')}_query"]
        if stage == "sft":
            rows.append({"prompt": [{"role": "user", "content": prompts.answer(question, [t for p in paths for t in p])}],
                         "completion": [{"role": "assistant", "content": target}]})
            continue
        topic = graph.index_of([int(next(iter(record["topic_entities"])))])[0]
        alternative = _other_path(graph, topic, {tuple(x) for p in result["paths"] for x in p}, rng,
                                  len(paths[0]) if paths else 2)
        if not paths or not alternative:
            continue
        rejected_answer = alternative[-1][2]
        if rejected_answer in answers:
            continue
        ask = f"{question}\nGive the knowledge-graph path you reason along, then the answer in braces."
        rows.append({"prompt": [{"role": "user", "content": ask}],
                     "chosen": [{"role": "assistant", "content": f"{_path_text(paths)} Answer: {target}"}],
                     "rejected": [{"role": "assistant",
                                   "content": f"{_path_text([alternative])} Answer: {{{rejected_answer}}}"}]})
    return rows


def _other_path(graph, topic: int, avoid: set, rng, hops: int) -> list[tuple[str, str, str]]:
    """A random walk from the topic that uses none of the prioritized steps (seeded)."""
    path, node = [], int(topic)
    for _ in range(max(1, hops)):
        neighbours, relations = graph.neighbors(node)
        options = [(int(v), int(r)) for v, r in zip(neighbours, relations)
                   if (int(graph.node_id[node]), graph.relation_names[r], int(graph.node_id[v])) not in avoid]
        if not options:
            break
        v, r = options[int(rng.integers(len(options)))]
        path.append((graph.name(node), graph.relation_names[r], graph.name(v)))
        node = v
    return path


def write_jsonl(rows: list[dict], out: str | Path) -> None:
    from adapath.fsutil import atomic_file

    with atomic_file(out) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def finetune(base: str | Path, stage: str, data: str | Path, out: str | Path, epochs: int = EPOCHS,
             lr: float | None = None, max_steps: int = -1, lora_rank: int = 8, batch_size: int = 2,
             seed: int = 42) -> list[dict]:
    """LoRA fine-tuning with trl (SFT or DPO). Returns the trainer's log history."""
    try:
        from datasets import load_dataset
        from peft import LoraConfig
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer
    except ImportError:
        raise InputError("fine-tuning needs the train extra: pip install 'adapath[train]'") from None
    if stage not in ("sft", "dpo"):
        raise InputError(f"--stage {stage!r}: choose sft or dpo")
    import datasets

    from adapath.quiet import quiet_third_party

    quiet_third_party()
    datasets.disable_progress_bars()  # "Generating train split" and "Map" bars
    dataset = load_dataset("json", data_files=str(data), split="train")
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(base))
    lora = LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules="all-linear")
    common = dict(output_dir=str(out), num_train_epochs=epochs, max_steps=max_steps,
                  per_device_train_batch_size=batch_size, logging_steps=1, save_strategy="no",
                  report_to=[], seed=seed, use_cpu=True)
    if stage == "sft":
        args = SFTConfig(learning_rate=lr or SFT_LR, **common)
        trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                             peft_config=lora)
    else:
        args = DPOConfig(learning_rate=lr or DPO_LR, beta=DPO_BETA, **common)
        trainer = DPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                             peft_config=lora)
    trainer.train()
    trainer.save_model(str(out))
    return trainer.state.log_history
