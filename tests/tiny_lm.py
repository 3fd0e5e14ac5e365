"""A character-level tokenizer and a randomly initialised tiny Llama, built locally (nothing is downloaded)."""

from __future__ import annotations

import string
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


def build_tokenizer(path: Path):
    """Save a character-level fast tokenizer with a chat template to ``path``; return it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.printable) - set("\x0b\x0c"))
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    return fast


def build_model(path: Path) -> str:
    """Save the tokenizer and a 1-layer, 32-wide random Llama to ``path``; return the path."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_tokenizer(path)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    LlamaForCausalLM(cfg).save_pretrained(path)
    return str(path)
