"""One update's effect on the policy's entropy, method by method, from the countdown task's warm start (docs/lab.md,
"One update's effect on entropy").

001 reads its Control Experiment I (Sec. 4.1-4.2, Table 1a, Fig. 2-3) through the weight of the correct responses:
weighted up (positive-dominant) they sharpen the output distribution and the entropy falls fastest, weighted down
(negative-dominant) the entropy rises; A-GRAE (001 Sec. 5, Eq. 13) and GRPO-N (004 Sec. 4) rest on the same reading.
If the account holds, it holds for each update, which is what this probe measures. In the lab's 50-step
runs the positive-dominant control ended with entropy and pass@64 *above* GRPO's. This probe asks whether the
mechanism is there at all on this model, one update at a time, with nothing of the later training in the way.

For each seed: 16 training prompts drawn by the seed, 8 responses each sampled from the warm start at temperature 1
(keyed draws, :mod:`rlvr_recipes.cpu_backend.sampling`), scored by the task's reward; each method's advantages from
its registered estimator; its update's gradient, that of the on-policy loss ``-sum(A * log pi) / tokens`` (the
clipped surrogate at ratio 1, token-mean as ``loss_agg_mode=token-mean``). The entropy is the token-mean entropy of
the policy over 2 responses sampled from the warm start for each of the 200 held-out prompts (as verl's
``actor/entropy``, on fixed held-out responses), and two effects on it are measured:

- ``adam``: the entropy after one step of the lab's optimizer minus before: the gradient clipped to norm 1
  (``optim.clip_grad``) and one AdamW step at the lab's learning rate 1e-4 (betas 0.9/0.999, no weight decay), a
  fresh optimizer as at the run's first step;
- ``sgd``: the entropy's first-order change along the unit gradient step, ``-grad H . g / |g|`` (per unit length).

Each claim (:data:`CLAIMS`) is tested by the paired t-test over seeds (:func:`rlvr_recipes.launch.compare.
diff_verdict`), each seed one independent batch: held, did not hold or cannot be judged.

    python benchmarks/lab_entropy_probe.py --seeds 32 --first-seed 125 --json benchmarks/lab_entropy_probe.json

With ``--from`` the probe starts instead from the final models of one method's finished runs in comparisons
(``--method``, default GRPO's), each model probed on the ``--seeds`` batches: a claim is then tested over the
models, each one's batches averaged (one unit a run), and the claims of :data:`TRAINED_CLAIMS` are tested too.

    python benchmarks/lab_entropy_probe.py --from runs/lab_symmetry,runs/lab_symmetry_121 --seeds 4 \
        --first-seed 157 --json benchmarks/lab_entropy_probe_trained.json

With ``--final`` nothing is updated: the held-out entropy of every finished run's final model in the ``--from``
comparisons is measured on its own samples (``FINAL_SAMPLES`` for each of the 200 held-out prompts, keyed by the
run's seed), with the warm start's on each seed's draws, and each entropy claim of
:data:`rlvr_recipes.launch.compare.EXPLORATION_CLAIMS` is tested seed by seed on it (:func:`final_claims`): the
entropy the runs log is taken on their training batches, this one on prompts no run trains on.

    python benchmarks/lab_entropy_probe.py --final \
        --from runs/lab_exploration,runs/lab_symmetry,runs/lab_symmetry_121,runs/lab_symmetry_neg \
        --json benchmarks/lab_final_entropy.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch

from rlvr_recipes.launch.compare import (CLAIMED_ABOVE, EXPLORATION_CLAIMS, finished_runs, load_policy, paired_claim,
                                         render_prompts)

#: the methods probed: GRPO, 001's two Table 1 controls, A-GRAE and GRPO-N (the lab's estimators, GRPO's loss)
METHODS = ("grpo", "agrae_pos_dominant", "agrae_neg_dominant", "agrae", "grpo_n")
#: the figures of an exploration claim that are about entropy
ENTROPY_FIGURES = ("entropy", "entropy_below")
#: the entropy claims of :data:`~rlvr_recipes.launch.compare.EXPLORATION_CLAIMS` between two of :data:`METHODS`, read
#: here of one update's entropy change: (method, its baseline, whether the claim is that the method's lies above it,
#: source)
CLAIMS = tuple((method, base, CLAIMED_ABOVE[figure], source) for method, base, source, figures in EXPLORATION_CLAIMS
               for figure in ENTROPY_FIGURES if figure in figures and {method, base} <= set(METHODS))
#: (method, whether the claim is that its update's entropy change lies above 0, source): claims about a model after
#: training, where 001 Fig. 3 has negative-dominant's entropy rise "except at the very beginning"
TRAINED_CLAIMS = (("agrae_neg_dominant", True,
                   "001 Sec. 4.2, Fig. 3 (Table 1 negative-dominant, after the beginning)"),)
#: the step in the keys of the probe's draws: apart from the rollouts' (trainer steps, -1) and scoring's (-2)
PROBE_STEP = -3
#: the lab's settings (launch.cpu_run's countdown task, rlvr_recipes/configs/cpu.yaml, verl's optimizer defaults)
LR, CLIP_GRAD, BETAS, PROMPTS, GROUP, HELD_OUT_SAMPLES = 1e-4, 1.0, (0.9, 0.999), 16, 8, 2
#: responses sampled for each held-out prompt when a final model's own held-out entropy is measured (``--final``)
FINAL_SAMPLES = 4


def response_stats(model: torch.nn.Module, sequences: torch.Tensor, attention_mask: torch.Tensor,
                   response_mask: torch.Tensor, prompt_width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log-probs (bs, R), entropies (bs, R))`` of the ``R`` response tokens of ``sequences`` ``(bs, W + R)``
    (left-padded prompts of width ``W``, then the responses); positions count from each row's first real token, as
    ``generate`` counts them. Entries outside ``response_mask`` are zero."""
    positions = (attention_mask.cumsum(dim=1) - 1).clamp(min=0)
    logits = model(input_ids=sequences, attention_mask=attention_mask, position_ids=positions).logits
    logits = logits[:, prompt_width - 1 : -1]
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, sequences[:, prompt_width:, None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(dim=-1)
    return logp * response_mask, entropy * response_mask


def token_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over the tokens of ``mask`` (verl's ``token-mean``)."""
    return (values * mask).sum() / mask.sum().clamp(min=1)


def flat_grad(scalar: torch.Tensor, params: Sequence[torch.Tensor], retain: bool = True) -> torch.Tensor:
    """The gradient of ``scalar`` with respect to ``params``, flattened into one vector."""
    grads = torch.autograd.grad(scalar, params, retain_graph=retain, allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)])


def adam_first_step(model: torch.nn.Module, grad: torch.Tensor, lr: float = LR, clip: float = CLIP_GRAD) -> None:
    """One step of a fresh ``torch.optim.AdamW`` (``BETAS``, no weight decay) on ``model``'s parameters with the
    flattened ``grad``, clipped first to norm ``clip`` by ``torch.nn.utils.clip_grad_norm_``, as verl's actor steps."""
    params = [p for p in model.parameters() if p.requires_grad]
    offset = 0
    for p in params:
        p.grad = grad[offset : offset + p.numel()].view_as(p).clone()
        offset += p.numel()
    torch.nn.utils.clip_grad_norm_(params, clip)
    torch.optim.AdamW(params, lr=lr, betas=BETAS, weight_decay=0.0).step()
    for p in params:
        p.grad = None


def advantages_of(method: str, rewards: torch.Tensor, response_mask: torch.Tensor, uids: np.ndarray) -> torch.Tensor:
    """``(bs, R)`` advantages of ``method``'s registered estimator for outcome ``rewards`` ``(bs,)`` (placed on each
    response's last token), with the algorithm's defaults (GRPO's std normalisation on)."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    import rlvr_recipes.advantage.estimators  # noqa: F401  (registers the package's estimators)

    last = response_mask.sum(dim=1).long().clamp(min=1) - 1
    token_rewards = torch.zeros_like(response_mask, dtype=torch.float32)
    token_rewards[torch.arange(len(rewards)), last] = rewards.float()
    config = OmegaConf.create({"norm_adv_by_std_in_grpo": True})
    advantages, _ = get_adv_estimator_fn(method)(token_level_rewards=token_rewards, response_mask=response_mask,
                                                 index=uids, config=config)
    return advantages


def sample(model: Any, tokenizer: Any, prompts: list[str], samples: int, seed: int,
           max_new_tokens: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, list[str]]:
    """``samples`` keyed draws (temperature 1) for each of ``prompts``: ``(sequences, attention_mask,
    response_mask, prompt_width, texts)``; a response runs to its first end-of-sequence token, included."""
    from rlvr_recipes.cpu_backend.sampling import keyed_sampling, request_key

    enc = tokenizer([p for p in prompts for _ in range(samples)], return_tensors="pt", padding=True,
                    add_special_tokens=False)
    keys = [request_key(seed, PROBE_STEP, ids[mask.bool()].tolist(), j % samples)
            for j, (ids, mask) in enumerate(zip(enc["input_ids"], enc["attention_mask"]))]
    width = enc["input_ids"].shape[1]
    processors, _ = keyed_sampling(keys, width)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, temperature=None, top_k=None,
                             top_p=None, logits_processor=processors, pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.eos_token_id)
    generated = out[:, width:]
    ended = (generated == tokenizer.eos_token_id).int().cumsum(dim=1)
    response_mask = ((ended == 0) | ((ended == 1) & (generated == tokenizer.eos_token_id))).float()
    attention_mask = torch.cat([enc["attention_mask"].float(), response_mask], dim=1)
    texts = tokenizer.batch_decode(generated * response_mask.long(), skip_special_tokens=True)
    return out, attention_mask, response_mask, width, texts


def probe_seed(model: Any, tokenizer: Any, train: Any, test: Any, reward_fn: Callable[..., Any], seed: int,
               max_new_tokens: int) -> dict[str, Any]:
    """One seed's batch: each method's entropy change after the lab's first optimizer step (``adam``) and its
    first-order change along the unit gradient step (``sgd``), with the batch's accuracy and entropy before."""
    rows = np.random.default_rng([seed, 2]).choice(len(train), size=PROMPTS, replace=False)
    seqs, attn, resp, width, texts = sample(model, tokenizer, render_prompts(tokenizer, train["prompt"].iloc[rows]),
                                            GROUP, seed, max_new_tokens)
    owner = np.repeat(rows, GROUP)
    rewards = torch.tensor([float(_score(reward_fn, train, r, t)) for r, t in zip(owner, texts)])
    held_seqs, held_attn, held_resp, held_width, _ = sample(model, tokenizer, render_prompts(tokenizer, test["prompt"]),
                                                            HELD_OUT_SAMPLES, seed, max_new_tokens)

    def held_out_entropy() -> torch.Tensor:
        return token_mean(response_stats(model, held_seqs, held_attn, held_resp, held_width)[1], held_resp)

    params = [p for p in model.parameters() if p.requires_grad]
    state = {k: v.clone() for k, v in model.state_dict().items()}
    entropy = held_out_entropy()
    entropy_grad = flat_grad(entropy, params, retain=False)
    logp, _ = response_stats(model, seqs, attn, resp, width)
    out: dict[str, Any] = {"seed": seed, "accuracy": float(rewards.mean()), "entropy": float(entropy.detach()),
                           "adam": {}, "sgd": {}, "grad_norm": {}}
    grads = {m: flat_grad(token_mean(-advantages_of(m, rewards, resp, owner.astype(str)) * logp, resp), params)
             for m in METHODS}
    for method, grad in grads.items():
        norm = float(grad.norm())
        out["grad_norm"][method] = norm
        out["sgd"][method] = float(-(entropy_grad @ grad) / norm) if norm > 0 else 0.0
        adam_first_step(model, grad)
        with torch.no_grad():
            out["adam"][method] = float(held_out_entropy()) - out["entropy"]
        model.load_state_dict(state)
    return out


def own_held_out_entropy(model: Any, tokenizer: Any, test: Any, seed: int, max_new_tokens: int,
                         samples: int = FINAL_SAMPLES) -> float:
    """The token-mean entropy of ``model`` over ``samples`` responses it samples itself (keyed by ``seed``) for each
    held-out prompt: verl's ``actor/entropy`` taken on the held-out prompts instead of a training batch."""
    seqs, attn, resp, width, _ = sample(model, tokenizer, render_prompts(tokenizer, test["prompt"]), samples, seed,
                                        max_new_tokens)
    with torch.no_grad():
        return float(token_mean(response_stats(model, seqs, attn, resp, width)[1], resp))


def final_claims(final: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each entropy claim of :data:`rlvr_recipes.launch.compare.EXPLORATION_CLAIMS` whose two methods have final
    models at two seeds or more in ``final`` (``{"method", "seed", "entropy"}`` rows), tested seed by seed (the paired
    t-test), with the figures it was taken on."""
    by: dict[str, dict[str, float]] = {}
    for row in final:
        by.setdefault(row["method"], {})[str(row["seed"])] = row["entropy"]
    out = []
    for method, base, source, figures in EXPLORATION_CLAIMS:
        if len(set(by.get(method, {})) & set(by.get(base, {}))) < 2:
            continue
        for figure in (f for f in ENTROPY_FIGURES if f in figures):
            above = CLAIMED_ABOVE[figure]
            out.append(paired_claim(f"{method}'s final model's own held-out entropy lies "
                                    f"{'above' if above else 'below'} {base}'s", source, method, by[method], base,
                                    by[base], above))
    return out


def _score(reward_fn: Callable[..., Any], df: Any, row: int, text: str) -> float:
    score = reward_fn(df["data_source"].iloc[row], text, df["reward_model"].iloc[row]["ground_truth"])
    return float(score["score"] if isinstance(score, dict) else score)


def claims(results: list[dict[str, Any]], trained: bool = False) -> list[dict[str, Any]]:
    """Each claim of :data:`CLAIMS` (and with ``trained`` of :data:`TRAINED_CLAIMS`) on each effect (``adam``,
    ``sgd``), tested unit by unit with the paired t-test (a result's ``unit``: its run's seed, the mean of its
    batches; without one, its own seed), with the figures it was taken on."""
    units: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        units.setdefault(str(r.get("unit", r["seed"])), []).append(r)

    def by_unit(effect: str, method: str) -> dict[str, float]:
        return {u: float(np.mean([r[effect][method] for r in rs])) for u, rs in units.items()}

    tests = [*CLAIMS, *((method, None, above, source) for method, above, source in (TRAINED_CLAIMS if trained else ()))]
    out = []
    for effect in ("adam", "sgd"):
        for method, base, above, source in tests:
            mine = by_unit(effect, method)
            theirs = by_unit(effect, base) if base else {u: 0.0 for u in mine}
            against = f"{base}'s" if base else "0"
            claim = f"the entropy change of {method}'s update ({effect}) lies {'above' if above else 'below'} {against}"
            tested = paired_claim(claim, source, method, mine, base or "zero", theirs, above)
            out.append({"claim": tested.pop("claim"), "effect": effect, **tested})
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=32, help="batches, one per seed")
    parser.add_argument("--first-seed", type=int, default=125)
    parser.add_argument("--tiny-dir", default=None, help="the countdown build (default runs/tiny_countdown)")
    parser.add_argument("--json", default=None, help="write the per-seed figures and the claims here")
    parser.add_argument("--from", dest="comparisons", default=None,
                        help="comma-separated comparison folders: probe the final models of --method's finished runs")
    parser.add_argument("--method", default="grpo", help="whose runs --from probes (default grpo)")
    parser.add_argument("--final", action="store_true",
                        help="update nothing: every --from run's final model's held-out entropy, and the claims on it")
    args = parser.parse_args(argv)
    command = "python benchmarks/lab_entropy_probe.py " + " ".join(sys.argv[1:] if argv is None else argv)

    import pandas as pd

    from rlvr_recipes.launch.cpu_run import compose, embedded_task, ensure_tiny
    from rlvr_recipes.reward.reference import reference_settings, settings_reward

    torch.manual_seed(0)
    paths = ensure_tiny(args.tiny_dir, "countdown")
    settings = reference_settings(compose(list(embedded_task("countdown").overrides)))
    reward_fn = settings_reward(settings)
    if args.final:
        return _final(args, command, paths, settings["max_response_length"])
    models: list[tuple[Optional[str], str]] = [(None, paths["model"])]
    if args.comparisons:
        models = []
        for out in args.comparisons.split(","):
            runs = finished_runs(out).get(args.method, [])
            if not runs:
                print(f"error: {out}/runs/{args.method} holds no finished run", file=sys.stderr)
                return 2
            models += [(str(run.seed), run.final_model) for run in runs]
    train, test = pd.read_parquet(paths["train"]), pd.read_parquet(paths["test"])
    results = []
    started = time.monotonic()
    for unit, path in models:
        model, tokenizer = load_policy(path)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = probe_seed(model, tokenizer, train, test, reward_fn, seed, settings["max_response_length"])
            if unit is not None:
                r.update(unit=unit, model=os.path.relpath(path))
            results.append(r)
            print(("" if unit is None else f"run seed {unit}, ") + f"seed {seed}: accuracy {r['accuracy']:.3f}, "
                  f"entropy {r['entropy']:.4f}; entropy change after one Adam step "
                  + ", ".join(f"{m} {r['adam'][m]:+.2e}" for m in METHODS)
                  + f"  ({time.monotonic() - started:.0f} s)", flush=True)
    tested = claims(results, trained=bool(args.comparisons))
    for c in tested:
        print(f"{c['verdict']:>16}  {c['claim']} ({c['source']}): {c['evidence']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command,
                       "settings": {"lr": LR, "clip_grad": CLIP_GRAD, "betas": BETAS, "prompts": PROMPTS,
                                    "group": GROUP, "held_out_samples": HELD_OUT_SAMPLES,
                                    "model": os.path.relpath(paths["model"])},
                       "from": args.comparisons, "method": args.method if args.comparisons else None,
                       "seeds": results, "claims": tested}, f, indent=1)
            f.write("\n")
    return 0


def _final(args: argparse.Namespace, command: str, paths: dict[str, str], max_new_tokens: int) -> int:
    """``--final``: each finished run's final model's own held-out entropy, the warm start's on each seed's draws, and
    :func:`final_claims`."""
    import pandas as pd

    if not args.comparisons:
        print("error: --final measures the runs of --from; give --from", file=sys.stderr)
        return 2
    test = pd.read_parquet(paths["test"])
    models = [(out, run.method, run.seed, run.final_model) for out in args.comparisons.split(",")
              for runs in finished_runs(out).values() for run in runs]
    started, final, start = time.monotonic(), [], {}
    warm_start = load_policy(paths["model"])
    for out, method, seed, path in models:
        if str(seed) not in start:
            start[str(seed)] = own_held_out_entropy(*warm_start, test, seed, max_new_tokens)
        final.append({"comparison": os.path.relpath(out), "method": method, "seed": seed,
                      "entropy": own_held_out_entropy(*load_policy(path), test, seed, max_new_tokens)})
        print(f"{out} {method} seed {seed}: held-out entropy {final[-1]['entropy']:.4f} (warm start "
              f"{start[str(seed)]:.4f})  ({time.monotonic() - started:.0f} s)", flush=True)
    tested = final_claims(final)
    for c in tested:
        print(f"{c['verdict']:>16}  {c['claim']} ({c['source']}): {c['evidence']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command,
                       "settings": {"samples": FINAL_SAMPLES, "model": os.path.relpath(paths["model"])},
                       "start": start, "final": final, "claims": tested}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
