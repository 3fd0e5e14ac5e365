"""launch.evaluate's Hugging Face generation path on a tiny model and tokenizer built here (no download)."""

import json

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny")
    chars = list("0123456789+=?\\{}boxed ")
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")
    fast.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    fast.save_pretrained(path)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)
    LlamaForCausalLM(cfg).save_pretrained(path)
    return str(path)


def test_hf_generation_end_to_end(tiny_model, tmp_path):
    from launch.evaluate import main

    data = tmp_path / "d.parquet"
    pd.DataFrame({
        "data_source": ["toy", "toy"],
        "prompt": [[{"role": "user", "content": "1+1="}], [{"role": "user", "content": "2+2="}]],
        "reward_model": [{"style": "rule", "ground_truth": "2"}, {"style": "rule", "ground_truth": "4"}],
    }).to_parquet(data)
    main(["--model", tiny_model, "--data", str(data), "--backend", "hf", "--n", "2", "--k", "1", "2",
          "--max-new-tokens", "4", "--out", str(tmp_path)])
    rows = [json.loads(l) for l in (tmp_path / "generations.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(len(r["responses"]) == 2 and isinstance(r["greedy"], str) for r in rows)
    summary = json.loads((tmp_path / "passk.json").read_text())
    assert summary["benchmarks"]["toy"]["problems"] == 2 and 0.0 <= summary["overall"]["pass@2"] <= 1.0
