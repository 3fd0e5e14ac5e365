"""benchmarks/lab_entropy_probe.py: one update's effect on entropy (docs/lab.md, "One update's effect on entropy")."""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np
import pytest
import torch

from tests.tiny_lm import build_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A random 1-layer Llama in float64 (finite differences need it) and its character tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_model(tmp_path_factory.mktemp("tiny"))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64).eval()
    return model, AutoTokenizer.from_pretrained(path, padding_side="left")


def _batch(tiny):
    from benchmarks.lab_entropy_probe import sample

    model, tok = tiny
    prompts = [tok.apply_chat_template([{"role": "user", "content": c}], add_generation_prompt=True, tokenize=False)
               for c in ("1+2", "12+30=")]
    return sample(model, tok, prompts, 2, seed=7, max_new_tokens=6)


def test_response_stats_are_each_row_alone_whatever_its_left_padding(tiny):
    """The log-probs and entropies of a left-padded batch are those of each row run alone without padding (positions
    counted from its first real token, as generate counts them), and the response mask ends at the first
    end-of-sequence token, which it includes."""
    from benchmarks.lab_entropy_probe import response_stats

    model, tok = tiny
    seqs, attn, resp, width, _ = _batch(tiny)
    assert attn[:, :width].sum(dim=1).unique().numel() == 2  # two prompt lengths: the short rows are padded
    with torch.no_grad():
        logp, entropy = response_stats(model, seqs, attn, resp, width)
        for i in range(len(seqs)):
            pad = int(width - attn[i, :width].sum())
            logits = model(input_ids=seqs[i : i + 1, pad:]).logits[0, width - pad - 1 : -1]
            log_softmax = torch.log_softmax(logits, dim=-1)
            mask = resp[i]
            expected = log_softmax.gather(-1, seqs[i, width:, None]).squeeze(-1) * mask
            torch.testing.assert_close(logp[i], expected, rtol=0, atol=1e-10)
            torch.testing.assert_close(entropy[i], -(log_softmax.exp() * log_softmax).sum(-1) * mask, rtol=0,
                                       atol=1e-10)
            ends = (seqs[i, width:] == tok.eos_token_id).nonzero()
            assert int(mask.sum()) == (int(ends[0]) + 1 if len(ends) else mask.numel())
            assert bool((mask[: int(mask.sum())] == 1).all())


def test_adam_first_step_is_the_clipped_sign_step(tiny):
    """One fresh AdamW step after clipping moves each parameter by lr * g / (|g| + eps) with g clipped to norm 1
    (Adam's first step: the bias-corrected moments are g and g^2), worked here from the equations."""
    from benchmarks.lab_entropy_probe import adam_first_step

    model, _ = tiny
    params = [p for p in model.parameters() if p.requires_grad]
    before = torch.cat([p.detach().reshape(-1) for p in params])
    grad = torch.randn(before.numel(), generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 0.01
    grad[:5] = 0.0
    state = {k: v.clone() for k, v in model.state_dict().items()}
    adam_first_step(model, grad, lr=1e-3, clip=1.0)
    after = torch.cat([p.detach().reshape(-1) for p in params])
    model.load_state_dict(state)
    clipped = grad * min(1.0, 1.0 / (float(grad.norm()) + 1e-6))
    assert float(grad.norm()) > 1.0  # the clip binds
    torch.testing.assert_close(after - before, -1e-3 * clipped / (clipped.abs() + 1e-8), rtol=1e-6, atol=1e-12)
    assert bool((after[:5] == before[:5]).all())


def test_sgd_effect_is_the_entropy_change_along_the_unit_gradient_step(tiny):
    """The probe's ``sgd`` effect, ``-grad H . g / |g|``, is the slope of the entropy along the unit step against g:
    the central difference of H over steps of -/+ 1e-3 agrees with it to 1 % (the model's rotary tables are float32,
    so much smaller steps are no closer)."""
    from benchmarks.lab_entropy_probe import flat_grad, response_stats, token_mean

    model, _ = tiny
    seqs, attn, resp, width, _ = _batch(tiny)
    params = [p for p in model.parameters() if p.requires_grad]

    def entropy() -> torch.Tensor:
        return token_mean(response_stats(model, seqs, attn, resp, width)[1], resp)

    slope_of = flat_grad(entropy(), params, retain=False)
    g = torch.randn(slope_of.numel(), generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    unit = g / g.norm()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    moved = {}
    with torch.no_grad():
        for h in (1e-3, -1e-3):
            offset = 0
            for p in params:
                p -= h * unit[offset : offset + p.numel()].view_as(p)
                offset += p.numel()
            moved[h] = float(entropy())
            model.load_state_dict(state)
    assert (moved[1e-3] - moved[-1e-3]) / 2e-3 == pytest.approx(float(-(slope_of @ unit)), rel=1e-2)


def test_advantages_are_the_registered_estimators_worked_by_hand():
    """Two groups of 4, rewards [1, 0, 0, 0] and [1, 1, 0, 0]: GRPO's (r - mean) / std (unbiased std: 0.5 and
    1/sqrt(3)), the positive advantages x 10 and / 10 for 001's controls, GRPO-N's min(A, 0), and A-GRAE's Eq. 12-13
    (omega = 3/8; group 1, p = 1/4: weight omega / (2 sqrt p) + (1 - omega) / (2 sqrt(1 - p)), positives x omega), on
    every response token."""
    from benchmarks.lab_entropy_probe import advantages_of

    rewards = torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0])
    mask = torch.ones(8, 3)
    mask[1, 2] = 0.0
    uids = np.array(["a"] * 4 + ["b"] * 4)
    grpo = np.array([1.5, -0.5, -0.5, -0.5, *([3 ** 0.5 / 2] * 2), *([-(3 ** 0.5) / 2] * 2)])
    w1 = 0.375 / (2 * 0.5) + 0.625 / (2 * math.sqrt(0.75))
    w2 = 0.375 / (2 * math.sqrt(0.5)) + 0.625 / (2 * math.sqrt(0.5))
    expected = {"grpo": grpo, "agrae_pos_dominant": np.where(grpo > 0, grpo * 10, grpo),
                "agrae_neg_dominant": np.where(grpo > 0, grpo / 10, grpo), "grpo_n": np.minimum(grpo, 0),
                "agrae": np.where(grpo > 0, 0.375, 1.0) * grpo * np.array([w1] * 4 + [w2] * 4)}
    for method, want in expected.items():
        adv = advantages_of(method, rewards, mask, uids)
        np.testing.assert_allclose(adv[:, 0].numpy(), want, rtol=1e-5, err_msg=method)
        assert float(adv[1, 2]) == 0.0 and torch.equal(adv[:, 1], adv[:, 0]), method


def _assert_documented_and_made(command: str, target: str) -> None:
    """``command`` is shown in docs/lab.md (a commented command's continuation lines joined) and is the one command
    `make TARGET` runs."""
    from tests.conftest import make_recipe

    with open(os.path.join(ROOT, "docs", "lab.md")) as f:
        assert command in re.sub(r"\s*\\\n#\s*", " ", f.read())
    assert make_recipe(target)[1] == [command]


@pytest.mark.parametrize("name, target, first_seed", [
    ("lab_entropy_probe", "lab-entropy-probe", 125),
    ("lab_entropy_probe_trained", "lab-entropy-probe-trained", 157),
])
def test_committed_probe_gives_the_claims_it_records(name, target, first_seed):
    """benchmarks/lab_entropy_probe.json (from the warm start) and lab_entropy_probe_trained.json (from GRPO's trained
    models): each one's claims are the ones its per-seed figures give, its command is the one docs/lab.md shows and
    the one its make target runs, and its batch seeds are the lab's new ones (125 on, 157 on)."""
    from benchmarks.lab_entropy_probe import METHODS, claims

    with open(os.path.join(ROOT, "benchmarks", f"{name}.json")) as f:
        probe = json.load(f)
    assert claims(probe["seeds"], trained=bool(probe.get("from"))) == probe["claims"]
    seeds = sorted({r["seed"] for r in probe["seeds"]})
    assert seeds == list(range(first_seed, first_seed + len(seeds)))
    assert len({str(r.get("unit", r["seed"])) for r in probe["seeds"]}) >= 8
    assert all(set(r["adam"]) == set(METHODS) == set(r["sgd"]) for r in probe["seeds"])
    _assert_documented_and_made(probe["command"], target)


def test_own_held_out_entropy_is_the_token_mean_over_the_models_own_samples(tiny):
    """A final model's held-out entropy: its own keyed samples (the same draws again for the same seed, others for
    another), the token-mean of its entropy over them."""
    import pandas as pd

    from benchmarks.lab_entropy_probe import own_held_out_entropy, response_stats, sample, token_mean

    model, tok = tiny
    test = pd.DataFrame({"prompt": [[{"role": "user", "content": c}] for c in ("1+2", "12+30=", "7")]})
    got = own_held_out_entropy(model, tok, test, seed=3, max_new_tokens=5, samples=2)
    prompts = [tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in test["prompt"]]
    seqs, attn, resp, width, _ = sample(model, tok, prompts, 2, 3, 5)
    with torch.no_grad():
        entropy = response_stats(model, seqs, attn, resp, width)[1]
    assert got == pytest.approx(float(entropy.sum() / resp.sum()), rel=1e-12)
    assert got == pytest.approx(float(token_mean(entropy, resp)), rel=1e-12)
    assert own_held_out_entropy(model, tok, test, seed=3, max_new_tokens=5, samples=2) == got


def test_final_claims_pair_the_runs_by_seed_in_the_claimed_direction():
    """The entropy claims of launch.compare.EXPLORATION_CLAIMS on final models, worked by hand: GRPO-N's entropy
    above GRPO's by 0.01, 0.02 and 0.03 at three seeds (mean 0.02, sd 0.01, t on 2 df: interval 0.02 -/+ 4.303 x
    0.01 / sqrt 3 = [-0.0048, +0.0448]): cannot be judged; positive-dominant's below GRPO's at two seeds by 0.1 and
    0.2 (interval 0.15 -/+ 12.706 x 0.05 = [-0.485, +0.785]): cannot be judged; a method with one seed is left out."""
    from benchmarks.lab_entropy_probe import final_claims

    rows = [{"method": "grpo", "seed": s, "entropy": 0.1} for s in (1, 2, 3)]
    rows += [{"method": "grpo_n", "seed": s, "entropy": 0.1 + 0.01 * s} for s in (1, 2, 3)]
    rows += [{"method": "agrae_pos_dominant", "seed": s, "entropy": 0.1 - 0.1 * s} for s in (1, 2)]
    rows += [{"method": "agrae", "seed": 1, "entropy": 0.5}]
    tested = {c["claim"]: c for c in final_claims(rows)}
    assert set(tested) == {"grpo_n's final model's own held-out entropy lies above grpo's",
                           "agrae_pos_dominant's final model's own held-out entropy lies below grpo's"}
    grpo_n = tested["grpo_n's final model's own held-out entropy lies above grpo's"]
    assert grpo_n["verdict"] == "cannot be judged"
    assert "difference +0.020, 95 % interval [-0.005, +0.045]" in grpo_n["evidence"]
    assert grpo_n["values"]["difference by seed"] == pytest.approx({"1": 0.01, "2": 0.02, "3": 0.03})
    pos = tested["agrae_pos_dominant's final model's own held-out entropy lies below grpo's"]
    assert pos["verdict"] == "cannot be judged" and "difference -0.150, 95 % interval [-0.785, +0.485]" in pos[
        "evidence"]
    # two more seeds, GRPO-N's 0.1 below GRPO's: every shared seed is counted, the mean turns to -0.028
    rows += [{"method": m, "seed": s, "entropy": e} for s in (4, 5) for m, e in (("grpo_n", 0.0), ("grpo", 0.1))]
    grpo_n = next(c for c in final_claims(rows) if c["claim"].startswith("grpo_n"))
    assert "difference -0.028" in grpo_n["evidence"] and len(grpo_n["values"]["difference by seed"]) == 5


def test_committed_final_entropy_gives_the_claims_it_records():
    """benchmarks/lab_final_entropy.json (docs/lab.md, "The final models' entropy on the held-out prompts"): its claims
    are the ones its final models' figures give, every run has the warm start's figure on its seed, and its command is
    the one docs/lab.md shows and `make lab-final-entropy` runs."""
    from benchmarks.lab_entropy_probe import final_claims

    with open(os.path.join(ROOT, "benchmarks", "lab_final_entropy.json")) as f:
        record = json.load(f)
    assert final_claims(record["final"]) == record["claims"] and len(record["claims"]) >= 4
    assert {str(row["seed"]) for row in record["final"]} == set(record["start"])
    _assert_documented_and_made(record["command"], "lab-final-entropy")
