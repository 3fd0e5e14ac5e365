"""Short supervised warm start of the tiny model, so that RL starts from a policy that is sometimes right.

A randomly initialised model never answers an addition correctly, every group's rewards are all 0 and every
group-relative advantage is 0 (ACR = 1): RL cannot start. Teacher-forced steps on the training split (loss on the
answer and end-of-sequence tokens only), stopped as soon as one sample at temperature 1.0 is right a target fraction
of the time (default 30 %), give RL a policy it can improve. The warm start sees only the training split; accuracy
is reported on the test split too.

The countdown task of the CPU lab (:func:`countdown_warm_start`) is warm-started for a fixed number of steps instead,
chosen by measurement (docs/lab.md): one answer per training problem, so that the model is right on some held-out
prompts, sometimes right on many and never right on others.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Optional

import pandas as pd
import torch

from rlvr_recipes.tiny_task import countdown
from rlvr_recipes.tiny_task.task import WARM_START_EVAL_EVERY, TaskSpec, addition_problems, prompt_text


def encode_examples(tokenizer: Any, examples: list[tuple[str, str]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``prompt + answer + eos`` ids of ``(prompt, answer)`` texts and the label tensor (-100 on
    prompt and padding)."""
    seqs, labels = [], []
    for prompt, answer in examples:
        p = tokenizer.encode(prompt, add_special_tokens=False)
        r = tokenizer.encode(answer, add_special_tokens=False) + [tokenizer.eos_token_id]
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
               batch_size: int = 128, lr: float = 3e-3, eval_every: int = WARM_START_EVAL_EVERY,
               seed: int = 0, on_check: Optional[Callable[[int, float, Any], None]] = None) -> dict[str, float]:
    """Train the model in ``model_dir`` on ``task``'s training split until it is right ``target_acc`` of the time.

    Teacher-forced cross-entropy on the answer and end-of-sequence tokens, AdamW, batches drawn from the training
    split. Every ``eval_every`` steps one sample per problem (temperature 1.0) is drawn for 256 training problems;
    training stops at the first evaluation at or above ``target_acc``, or after ``max_steps``. The model is saved in
    place. Returns the number of steps, the last loss and the test-split accuracy (sampled and greedy) before and after.
    ``on_check(steps, probe_acc, model)``, if given, is called at every check before the stopping rule (a
    ``target_acc`` above 1 never stops: ``benchmarks/addition_warm_start_spread.py`` follows whole trajectories).
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
        batch = rng.sample(train, min(batch_size, len(train)))
        ids, labels = encode_examples(tokenizer, [(prompt_text(a, b), str(a + b)) for a, b in batch])
        loss = model(input_ids=ids, attention_mask=ids != tokenizer.pad_token_id, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
        steps += 1
        loss_value = float(loss.detach())
        if steps % eval_every == 0:
            model.eval()
            probe_acc = sampled_accuracy(model, tokenizer, probe, seed=steps)
            if on_check is not None:
                on_check(steps, probe_acc, model)
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


def countdown_warm_start(model_dir: str, spec: countdown.CountdownSpec, steps: int = 1000, batch_size: int = 128,
                         lr: float = 1e-3, seed: int = 0,
                         say: Any = lambda s: print(s, flush=True)) -> dict[str, float]:
    """Train the model in ``model_dir`` for ``steps`` supervised steps on ``spec``'s warm-start problems (none of
    them an RL or held-out prompt).

    Each problem gets one answer, drawn once from its listed answers; batches of ``batch_size`` are drawn
    epoch by epoch; teacher-forced cross-entropy on the answer and end-of-sequence tokens, AdamW at ``lr``. The
    model is saved in place. Returns the step count, the last loss and the seconds taken.
    """
    import time

    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).train()
    _, _, warm = countdown.countdown_problems(spec, with_warm_start=True)
    examples = [(countdown.prompt_text(p["numbers"], p["target"]), rng.choice(p["answers"])) for p in warm]
    optim = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    order: list[int] = []
    t0, loss_value = time.monotonic(), float("nan")
    for step in range(1, steps + 1):
        if len(order) < batch_size:
            order += rng.sample(range(len(examples)), len(examples))
        batch, order = [examples[i] for i in order[:batch_size]], order[batch_size:]
        ids, labels = encode_examples(tokenizer, batch)
        loss = model(input_ids=ids, attention_mask=ids != tokenizer.pad_token_id, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
        loss_value = float(loss.detach())
        if step % 100 == 0 or step == steps:
            say(f"[tiny] countdown warm start: step {step}/{steps}, loss {loss_value:.3f} "
                f"[{time.monotonic() - t0:.0f} s]")
    model.save_pretrained(model_dir)
    result = {"steps": steps, "loss": loss_value, "seconds": round(time.monotonic() - t0, 1),
              "train_examples": len(examples), "batch_size": batch_size, "lr": lr}
    pd.Series(result).to_json(f"{model_dir}/warm_start.json")
    return result
