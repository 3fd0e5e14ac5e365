"""Short supervised warm start of the tiny model, so that RL starts from a policy that is sometimes right.

A randomly initialised model never answers an addition correctly, every group's rewards are all 0 and every
group-relative advantage is 0 (ACR = 1): RL cannot start. Teacher-forced steps on the training split (loss on the
answer and end-of-sequence tokens only), stopped as soon as one sample at temperature 1.0 is right a target fraction
of the time (default 30 %), give RL a policy it can improve. The warm start sees only the training split; accuracy
is reported on the test split too.
"""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import torch

from rlvr_recipes.tiny_task.task import TaskSpec, addition_problems, prompt_text


def encode_examples(tokenizer: Any, pairs: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``prompt + answer + eos`` ids and the label tensor (-100 on prompt and padding)."""
    seqs, labels = [], []
    for a, b in pairs:
        p = tokenizer.encode(prompt_text(a, b), add_special_tokens=False)
        r = tokenizer.encode(str(a + b), add_special_tokens=False) + [tokenizer.eos_token_id]
        seqs.append(p + r)
        labels.append([-100] * len(p) + r)
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    lab = torch.full((len(seqs), width), -100, dtype=torch.long)
    for i, (s, lb) in enumerate(zip(seqs, labels)):
        ids[i, : len(s)] = torch.tensor(s)
        lab[i, : len(lb)] = torch.tensor(lb)
    return ids, lab


@torch.no_grad()
def sampled_accuracy(model: Any, tokenizer: Any, pairs: list[tuple[int, int]], temperature: float = 1.0,
                     seed: int = 0) -> float:
    """Fraction of ``pairs`` answered exactly right by one sample at ``temperature`` (0: greedy)."""
    from rlvr_recipes.reward.arithmetic import compute_score

    torch.manual_seed(seed)
    tokenizer.padding_side = "left"
    enc = tokenizer([prompt_text(a, b) for a, b in pairs], return_tensors="pt", padding=True, add_special_tokens=False)
    out = model.generate(
        **enc,
        max_new_tokens=len(str(max(a + b for a, b in pairs))) + 1,
        do_sample=temperature > 0,
        temperature=temperature if temperature > 0 else None,
        top_k=None,
        top_p=None,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    texts = tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    scores = [compute_score("", t, str(a + b)) for t, (a, b) in zip(texts, pairs)]
    return sum(scores) / len(scores)


def warm_start(model_dir: str, task: TaskSpec, max_steps: int = 3000, target_acc: float = 0.3,
               batch_size: int = 128, lr: float = 3e-3, eval_every: int = 100, seed: int = 0) -> dict[str, float]:
    """Train the model in ``model_dir`` on ``task``'s training split until it is right ``target_acc`` of the time.

    Teacher-forced cross-entropy on the answer and end-of-sequence tokens, AdamW, batches drawn from the training
    split. Every ``eval_every`` steps one sample per problem (temperature 1.0) is drawn for 256 training problems;
    training stops at the first evaluation at or above ``target_acc``, or after ``max_steps``. The model is saved in
    place. Returns the number of steps, the last loss and the test-split accuracy (sampled and greedy) before and after.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    train, test = addition_problems(task)
    probe = rng.sample(train, min(256, len(train)))
    before = sampled_accuracy(model, tokenizer, test)
    optim = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    steps, loss_value, probe_acc = 0, float("nan"), 0.0
    while steps < max_steps:
        model.train()
        ids, labels = encode_examples(tokenizer, rng.sample(train, min(batch_size, len(train))))
        loss = model(input_ids=ids, attention_mask=ids != tokenizer.pad_token_id, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
        steps += 1
        loss_value = float(loss.detach())
        if steps % eval_every == 0:
            model.eval()
            probe_acc = sampled_accuracy(model, tokenizer, probe, seed=steps)
            if probe_acc >= target_acc:
                break
    model.eval()
    result = {
        "steps": steps,
        "loss": loss_value,
        "train_probe_acc_sampled": probe_acc,
        "test_acc_sampled_before": before,
        "test_acc_sampled": sampled_accuracy(model, tokenizer, test),
        "test_acc_greedy": sampled_accuracy(model, tokenizer, test, temperature=0.0),
    }
    model.save_pretrained(model_dir)
    pd.Series(result).to_json(f"{model_dir}/warm_start.json")
    return result
