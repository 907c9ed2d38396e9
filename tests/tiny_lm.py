"""A tiny causal language model made from a config and a tokenizer trained here (no downloads)."""

from pathlib import Path

CORPUS = [
    "Which drug treats migraine? {sumatriptan}", "aspirin target PTGS2", "warfarin interacts with aspirin",
    "user: assistant: Answer: Paths: (a, target, b); (b, ppi, c)", "Give the knowledge-graph path you reason along",
    "Answer the biomedical question using the knowledge-graph paths below.", "{yes} {no} 0 1 2 3 4 5 6 7 8 9",
] * 20


def make_tiny_lm(directory: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>",
                                   bos_token="<s>", eos_token="</s>")
    fast.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
                          "{% if add_generation_prompt %}<s>assistant: {% endif %}")
    fast.save_pretrained(directory)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024,
                         pad_token_id=fast.pad_token_id, bos_token_id=fast.bos_token_id,
                         eos_token_id=fast.eos_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory
