"""Which learning rate lets GRPO raise held-out pass@1 on the countdown task within the lab's run length (docs/lab.md)?

verl's trainer costs about 2.7 s a step on 2 cores; this plain PyTorch loop does the same GRPO update in about 0.6 s,
so a sweep over learning rates and seeds takes minutes. For each (learning rate, seed) it starts from the task's warm
start (``runs/tiny_countdown``, built by ``python -m rlvr_recipes.launch.task_properties --task countdown``) and runs
``--steps`` steps of on-policy GRPO as the lab's config does:

- 16 RL prompts x 8 responses a step at temperature 1, at most 32 response tokens, scored by the countdown verifier;
- GRPO's advantage (reward minus the group mean, over the group's standard deviation + 1e-6; 000 Eq. 2), one
  update per batch (so the PPO ratio is 1 and clipping does nothing), token-mean loss, AdamW without weight decay,
  gradient norm clipped at 1.0 (verl's defaults); no KL term (verl's GRPO config adds one at 0.001).

At the start and every ``--eval-every`` steps it measures, on the 200 held-out prompts, greedy accuracy and pass@1
from ``--eval-samples`` samples per prompt at temperature 1. The lab itself then checks the chosen rate on verl's
trainer (docs/lab.md).

    python benchmarks/lab_countdown_lr.py --json benchmarks/lab_countdown_lr.json            # ~4 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from typing import Any

import numpy as np
import pandas as pd
import torch

from rlvr_recipes.reward.countdown import compute_score

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_RESPONSE = 32


def load_rows(path: str) -> list[tuple[str, str]]:
    """``(prompt text, ground truth)`` of a verl parquet file of the countdown task."""
    df = pd.read_parquet(path)
    return [(m[0]["content"], r["ground_truth"]) for m, r in zip(df["prompt"], df["reward_model"])]


class Policy:
    """The tiny model with sampling and per-token log-probabilities of sampled responses."""

    def __init__(self, model_dir: str):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)

    @torch.no_grad()
    def sample(self, prompts: list[str], n: int, temperature: float) -> tuple[dict, torch.Tensor, torch.Tensor, list[str]]:
        """``n`` responses per prompt: the prompt encoding, ``(B, T)`` response ids, ``(B, T)`` mask up to and
        including the first end-of-sequence token, and the decoded texts."""
        self.model.eval()
        enc = self.tok([p for p in prompts for _ in range(n)], return_tensors="pt", padding=True,
                       add_special_tokens=False)
        mode = dict(do_sample=True, temperature=temperature) if temperature > 0 else dict(do_sample=False)
        out = self.model.generate(**enc, max_new_tokens=MAX_RESPONSE, top_k=None, top_p=None,
                                  pad_token_id=self.tok.pad_token_id, eos_token_id=self.tok.eos_token_id, **mode)
        ids = out[:, enc["input_ids"].shape[1] :]
        is_eos = (ids == self.tok.eos_token_id).int()
        mask = (is_eos.cumsum(1) - is_eos) == 0
        return enc, ids, mask, self.tok.batch_decode(ids, skip_special_tokens=True)

    def token_logprobs(self, enc: dict, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` log-probability of each response token under the current model."""
        full = torch.cat([enc["input_ids"], ids], 1)
        attention = torch.cat([enc["attention_mask"], mask.long()], 1)
        positions = (attention.cumsum(1) - 1).clamp(min=0)
        logits = self.model(input_ids=full, attention_mask=attention, position_ids=positions).logits
        logits = logits[:, enc["input_ids"].shape[1] - 1 : -1]
        return torch.log_softmax(logits.float(), -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def scores(texts: list[str], truths: list[str]) -> torch.Tensor:
    return torch.tensor([compute_score("countdown", t, g)["score"] for t, g in zip(texts, truths)])


def evaluate(policy: Policy, test: list[tuple[str, str]], samples: int) -> dict[str, float]:
    """Held-out greedy accuracy and pass@1 (mean over ``samples`` samples per prompt at temperature 1)."""
    truths = [g for _, g in test]
    _, _, _, greedy = policy.sample([p for p, _ in test], 1, 0.0)
    _, _, _, sampled = policy.sample([p for p, _ in test], samples, 1.0)
    return {"greedy": float(scores(greedy, truths).mean()),
            "pass@1": float(scores(sampled, [g for g in truths for _ in range(samples)]).mean())}


def grpo_run(model_dir: str, train: list, test: list, lr: float, seed: int, steps: int, prompts: int, n: int,
             eval_every: int, eval_samples: int) -> dict[str, Any]:
    """One GRPO run from the warm start; its held-out figures at the start and every ``eval_every`` steps."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    policy = Policy(model_dir)
    optim = torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=0.0)
    curve = [{"step": 0, **evaluate(policy, test, eval_samples)}]
    rewards: list[float] = []
    order: list[int] = []
    for step in range(1, steps + 1):
        if len(order) < prompts:
            order += rng.sample(range(len(train)), len(train))
        batch, order = [train[i] for i in order[:prompts]], order[prompts:]
        enc, ids, mask, texts = policy.sample([p for p, _ in batch], n, 1.0)
        reward = scores(texts, [g for _, g in batch for _ in range(n)]).view(prompts, n)
        advantage = ((reward - reward.mean(1, keepdim=True)) / (reward.std(1, keepdim=True) + 1e-6)).reshape(-1, 1)
        policy.model.train()
        logprobs = policy.token_logprobs(enc, ids, mask)
        weights = mask.float()
        loss = -(advantage * logprobs * weights).sum() / weights.sum()  # token-mean; on-policy ratio = 1
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.model.parameters(), 1.0)
        optim.step()
        rewards.append(float(reward.mean()))
        if step % eval_every == 0 or step == steps:
            curve.append({"step": step, **evaluate(policy, test, eval_samples)})
    return {"lr": lr, "seed": seed, "curve": curve, "reward": rewards,
            "pass@1_rise": curve[-1]["pass@1"] - curve[0]["pass@1"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny-dir", default=os.path.join(ROOT, "runs", "tiny_countdown"))
    parser.add_argument("--lrs", default="3e-4,2e-4,1e-4,3e-5", help="comma-separated learning rates")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per learning rate")
    parser.add_argument("--extra-seeds-lr", type=float, default=1e-4, help="this rate also gets seeds 1 and 2")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--eval-every", type=int, default=20)
    parser.add_argument("--eval-samples", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model_dir = os.path.join(args.tiny_dir, "model")
    if not os.path.isdir(model_dir):
        raise SystemExit(f"error: no warm start at {model_dir}; build it with "
                         "`python -m rlvr_recipes.launch.task_properties --task countdown`")
    train = load_rows(os.path.join(args.tiny_dir, "data", "train.parquet"))
    test = load_rows(os.path.join(args.tiny_dir, "data", "test.parquet"))
    plan = [(float(lr), s) for lr in args.lrs.split(",") for s in range(args.seeds)]
    plan += [(args.extra_seeds_lr, s) for s in (1, 2) if (args.extra_seeds_lr, s) not in plan]
    runs, t0 = [], time.monotonic()
    for lr, seed in plan:
        run = grpo_run(model_dir, train, test, lr, seed, args.steps, args.prompts, args.n, args.eval_every,
                       args.eval_samples)
        runs.append(run)
        c = run["curve"]
        print(f"lr {lr:g} seed {seed}: held-out pass@1 " + " -> ".join(f"{x['pass@1']:.3f}" for x in c)
              + ", greedy " + " -> ".join(f"{x['greedy']:.3f}" for x in c)
              + f"; rise {run['pass@1_rise']:+.3f} [{time.monotonic() - t0:.0f} s]", flush=True)
    summary = {str(lr): float(np.mean([r["pass@1_rise"] for r in runs if r["lr"] == lr])) for lr, _ in plan}
    print("mean held-out pass@1 rise by learning rate: " + ", ".join(f"{k}: {v:+.3f}" for k, v in summary.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python benchmarks/lab_countdown_lr.py " + " ".join(os.sys.argv[1:]),
                       "settings": vars(args), "mean_rise": summary, "runs": runs,
                       "seconds": round(time.monotonic() - t0, 1)}, f, indent=1)


if __name__ == "__main__":
    main()
