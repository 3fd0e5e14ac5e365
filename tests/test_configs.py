"""Every recipe config composes on verl's ppo_trainer, passes verl's validate_config, and selects what it says."""

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import verl  # noqa: F401
from rlvr_recipes.advantage.estimators import AAPOOptions, AGRAEOptions, AVSPOOptions, SignOptions, WReinforceOptions
from rlvr_recipes.advantage.options import read_options
from rlvr_recipes.trainer.extension import CWGRPOOptions, DiagnosticsOptions, EstimatorStateOptions
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config

CONFIGS = Path(__file__).resolve().parents[1] / "rlvr_recipes" / "configs"
ENV = {"MODEL_PATH": "/models/x", "TRAIN_FILES": "/data/train.parquet", "VAL_FILES": "/data/val.parquet"}

# recipe: (estimator, loss_mode, loss_agg_mode, clip_low, clip_high, rollout.n, norm_by_std, use_kl_loss)
EXPECTED = {
    "grpo": ("grpo", "vanilla", "token-mean", 0.2, 0.2, 8, True, True),
    "dapo": ("grpo", "vanilla", "token-mean", 0.2, 0.28, 8, True, False),
    "drgrpo": ("grpo", "vanilla", "seq-mean-token-sum-norm", 0.2, 0.2, 8, False, False),
    "gspo": ("grpo", "gspo", "seq-mean-token-mean", 0.2, 0.2, 8, True, True),
    "avspo": ("avspo", "vanilla", "seq-mean-token-mean", 0.2, 0.2, 8, True, False),
    "agrae_grpo": ("agrae", "vanilla", "seq-mean-token-mean", 0.2, 0.2, 8, True, True),
    "agrae_dapo": ("agrae", "vanilla", "token-mean", 0.2, 0.28, 8, True, False),
    "agrae_drgrpo": ("agrae", "vanilla", "seq-mean-token-sum-norm", 0.2, 0.2, 8, False, False),
    "aapo": ("aapo", "aapo", "token-mean", 0.2, 0.2, 6, True, False),
    "cw_grpo": ("grpo", "vanilla", "seq-mean-token-mean", 0.2, 0.2, 12, True, True),
    "grpo_n": ("grpo_n", "vanilla", "token-mean", 0.2, 0.2, 8, True, True),
    "gspo_n": ("grpo_n", "gspo", "seq-mean-token-mean", 0.2, 0.2, 8, True, True),
}


def load(name, overrides=()):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(config_name=name, overrides=list(overrides))


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)


def test_every_recipe_is_in_the_table():
    names = {p.stem for p in CONFIGS.glob("*.yaml")} - {"cpu"}  # base/ and baseline/ hold the shared bodies
    assert names == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recipe_composes_validates_and_selects(name):
    cfg = load(name)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    est, loss, agg, lo, hi, n, norm, kl = EXPECTED[name]
    actor = cfg.actor_rollout_ref.actor
    assert cfg.algorithm.adv_estimator == est and est in ADV_ESTIMATOR_REGISTRY
    assert actor.policy_loss.loss_mode == loss and loss in POLICY_LOSS_REGISTRY
    assert actor.loss_agg_mode == agg
    assert actor.clip_ratio_low == pytest.approx(lo) and actor.clip_ratio_high == pytest.approx(hi)
    assert cfg.actor_rollout_ref.rollout.n == n
    assert cfg.algorithm.norm_adv_by_std_in_grpo is norm
    assert actor.use_kl_loss is kl
    assert cfg.actor_rollout_ref.model.path == ENV["MODEL_PATH"]
    assert cfg.trainer.v1.trainer_mode == "rlvr"  # the trainer extension, for every recipe
    for cls, section in ((AGRAEOptions, "agrae"), (AVSPOOptions, "avspo"), (AAPOOptions, "aapo"),
                         (SignOptions, "grpo_n"), (WReinforceOptions, "w_reinforce"),
                         (CWGRPOOptions, "cw_grpo"), (DiagnosticsOptions, "diagnostics"),
                         (EstimatorStateOptions, "estimator_state")):
        read_options(cls, cfg.algorithm, section)  # every declared option parses and validates


def test_dapo_specifics_and_overrides():
    # the dapo recipe is the A-GRAE paper's DAPO (001 App. C.2): no dynamic sampling, binary reward, completion 2048
    cfg = load("dapo")
    assert not cfg.algorithm.filter_groups.enable and cfg.reward.reward_manager.name == "dapo"
    assert not cfg.reward.reward_kwargs.overlong_buffer_cfg.enable
    assert cfg.reward.reward_kwargs.max_resp_len == cfg.data.max_response_length == 2048
    # DAPO's own two (the body every DAPO config builds on) come back with two keys
    cfg = load("dapo", ["algorithm.filter_groups.enable=true", "reward.reward_kwargs.overlong_buffer_cfg.enable=true"])
    assert cfg.algorithm.filter_groups.metric == "acc" and cfg.reward.reward_kwargs.overlong_buffer_cfg.len == 512
    # no recipe keeps verl's dual clip (no paper's objective has it); 3.0 restores it
    assert load("grpo_n").actor_rollout_ref.actor.clip_ratio_c == pytest.approx(1e9)
    assert load("grpo_n", ["actor_rollout_ref.actor.clip_ratio_c=3.0"]).actor_rollout_ref.actor.clip_ratio_c == 3.0
    cfg = load("agrae_grpo", ["algorithm.agrae.alpha=0.5", "actor_rollout_ref.rollout.n=16"])
    assert cfg.algorithm.agrae.alpha == 0.5 and cfg.actor_rollout_ref.rollout.n == 16
    assert cfg.reward.custom_reward_function.reward_kwargs.recipe == "accuracy"  # compute_score's own default
    cfg = load("aapo", ["reward.custom_reward_function.reward_kwargs.recipe=aapo_1p5b"])  # no `+` needed
    assert cfg.reward.custom_reward_function.reward_kwargs.recipe == "aapo_1p5b"


def test_missing_model_path_fails_with_its_name(monkeypatch):
    monkeypatch.delenv("MODEL_PATH")
    cfg = load("grpo")
    with pytest.raises(Exception, match="MODEL_PATH"):
        OmegaConf.to_container(cfg.actor_rollout_ref.model, resolve=True)
