"""The trainer extension's advantage step on a real verl DataProto, its state files, and AAPO's reference rewards."""

import copy
import json

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import verl
from rlvr_recipes.advantage import state
from rlvr_recipes.advantage.diagnostics import ACRTracker
from rlvr_recipes.advantage.losses import covariance_weights
from rlvr_recipes.launch.ref_rewards import main as ref_main
from rlvr_recipes.trainer.extension import (advantage_step, content_order, draw_ref_rewards, load_state, save_state,
                                          token_hash)

from tests.helpers import VARIANTS_ON_1000, algo, batch


def dataproto(groups, **extra):
    tlr, mask, uid = batch(groups)
    data = verl.DataProto.from_dict(tensors={"token_level_rewards": tlr, "response_mask": mask, **extra},
                                    non_tensors={"uid": uid})
    return data


def test_metrics_for_a_builtin_estimator():
    data, m = advantage_step(dataproto([[1, 0, 0, 0], [1, 1, 1, 1]]), algo(None), ACRTracker())
    assert data.batch["advantages"][:4, 0].tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5], rel=1e-5)
    assert m["acr/acr"] == 0.5 and m["acr/effective_acr"] == 0.5 and m["acr/all_correct_frac"] == 0.5
    assert m["acr/zero_adv_frac"] == 0.5 and m["acr/pos_neg_mass_ratio"] == pytest.approx(1.0)
    assert m["acr/acr_100"] == 0.5 and m["acr/volatility"] == 0.0


def test_estimator_figures_are_logged_and_cleared():
    cfg = algo("avspo")
    cfg.adv_estimator = "avspo"
    _, m = advantage_step(dataproto([[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0]]), cfg, ACRTracker())
    assert m["avspo/triggered"] == 1.0 and m["avspo/k"] == 4.0
    assert m["acr/effective_acr"] == pytest.approx(1 / 3)  # AVSPO revived the all-one group
    assert state.LAST_METRICS == {}


def test_aapo_gets_paired_reference_rewards():
    cfg = algo("aapo", group_token_norm=False)
    cfg.adv_estimator = "aapo"
    data = dataproto([[1, 0, 0, 0]], ref_rewards=torch.tensor([0.0, 0.0, 1.0, 0.0]))
    data, m = advantage_step(data, cfg, ACRTracker())
    assert data.batch["advantages"][:, 0].tolist() == pytest.approx([1.78, -0.5, -0.7, -0.5], rel=1e-5)
    assert m["aapo/margin_clip_frac"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="ref_rewards"):
        advantage_step(dataproto([[1, 0]]), cfg, ACRTracker())


def test_aapo_draws_from_cached_reference_rewards():
    cfg = algo("aapo", group_token_norm=False)
    cfg.adv_estimator = "aapo"
    data = dataproto([[1, 0, 0], [0, 0, 0]])
    infos = [{"index": 7, "ref_rewards": [1.0, 0.0, 0.0, 0.0]}] * 3 + [{"index": 8, "ref_rewards": [1.0, 1.0, 1.0]}] * 3
    data.non_tensor_batch["extra_info"] = np.array(infos, dtype=object)
    drawn = draw_ref_rewards(data.non_tensor_batch["extra_info"], data.non_tensor_batch["uid"], step=0)
    assert sorted(drawn[:3].tolist()) in ([0.0, 0.0, 0.0], [0.0, 0.0, 1.0])  # 3 distinct cache entries of prompt 7
    assert drawn[3:].tolist() == [1.0, 1.0, 1.0]
    again = draw_ref_rewards(data.non_tensor_batch["extra_info"], data.non_tensor_batch["uid"], step=0)
    assert np.array_equal(drawn, again)
    data, _ = advantage_step(data, cfg, ACRTracker())
    assert data.batch["advantages"][3:, 0].tolist() == pytest.approx([-0.2] * 3)  # 0 - 1 clipped at delta_low
    with pytest.raises(ValueError, match="cached reference rewards"):
        draw_ref_rewards(np.array([{"index": 1, "ref_rewards": [1.0]}] * 2, dtype=object), np.array(["a", "a"]), 0)


def test_aapo_pairs_each_response_with_the_same_reference_reward_whatever_the_row_order():
    """A seed replays: the pairing follows the batch's tokens, not the order its rows arrived in (timing) or its uid
    strings (random per run in verl)."""
    rng = np.random.default_rng(0)
    prompts = np.array([[5, 6], [5, 6], [5, 6], [7, 0], [7, 0], [7, 0]])
    responses = np.array([[1, 2], [3, 0], [1, 1], [4, 4], [2, 0], [9, 9]])
    infos = np.array([{"index": 7, "ref_rewards": [1.0, 0.0, 0.5, 0.25]}] * 3
                     + [{"index": 8, "ref_rewards": [0.125, 0.25, 0.375, 0.5, 0.625]}] * 3, dtype=object)
    uid = np.array(["b"] * 3 + ["a"] * 3, dtype=object)
    drawn = draw_ref_rewards(infos, uid, step=3, prompts=prompts, responses=responses)
    assert len(set(drawn[:3].tolist())) == 3 and set(drawn[:3].tolist()) <= {1.0, 0.0, 0.5, 0.25}
    assert len(set(drawn[3:].tolist())) == 3 and set(drawn[3:].tolist()) <= {0.125, 0.25, 0.375, 0.5, 0.625}
    for _ in range(5):
        perm = rng.permutation(6)
        other_uid = np.array(["x"] * 3 + ["c"] * 3, dtype=object)  # other strings, other order of the groups
        again = draw_ref_rewards(infos[perm], other_uid[perm], step=3, prompts=prompts[perm],
                                 responses=responses[perm])
        np.testing.assert_array_equal(again, drawn[perm])
    # without the tokens the pairing follows the rows: a permutation changes it (the run did not replay)
    by_rows = [draw_ref_rewards(infos[p], uid[p], step=3)[np.argsort(p)] for p in (np.arange(6), [2, 1, 0, 5, 4, 3])]
    assert not np.array_equal(*by_rows)
    # a new step draws anew
    assert not np.array_equal(draw_ref_rewards(infos, uid, step=4, prompts=prompts, responses=responses), drawn)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6), data=st.data())
def test_aapo_pairing_is_invariant_to_row_order_and_uid_strings(sizes, data):
    """Property: for any groups of distinct responses, permuting the rows and renaming the uids permutes the draws
    with them, and each group still gets distinct entries of its own cache."""
    rows = sum(sizes)
    group = np.repeat(np.arange(len(sizes)), sizes)
    prompts = np.stack([np.array([g + 1, 100 + g]) for g in group])
    responses = np.array([[g, j, 7] for g, size in enumerate(sizes) for j in range(size)])  # distinct in a group
    infos = np.array([{"index": int(g), "ref_rewards": [float(g * 10 + m) for m in range(5)]} for g in group],
                     dtype=object)
    uid = np.array([f"u{g}" for g in group], dtype=object)
    step = data.draw(st.integers(0, 1000))
    drawn = draw_ref_rewards(infos, uid, step=step, prompts=prompts, responses=responses)
    for g in range(len(sizes)):
        mine = drawn[group == g]
        assert len(set(mine.tolist())) == sizes[g] and all(g * 10 <= v < g * 10 + 5 for v in mine)
    perm = np.array(data.draw(st.permutations(range(rows))))
    renamed = np.array([f"other-{(g * 7919) % 101}" for g in group], dtype=object)
    again = draw_ref_rewards(infos[perm], renamed[perm], step=step, prompts=prompts[perm], responses=responses[perm])
    np.testing.assert_array_equal(again, drawn[perm])


def test_cw_grpo_per_group_folds_weights():
    cfg = algo("cw_grpo", per_group=True)
    cfg.adv_estimator = "grpo"
    old = -torch.arange(1, 25, dtype=torch.float32).reshape(8, 3) / 7
    data = dataproto([[1, 0, 0, 1], [1, 0, 0, 0]], old_log_probs=old)
    plain, _ = advantage_step(dataproto([[1, 0, 0, 1], [1, 0, 0, 0]]), algo(None), ACRTracker())
    data, m = advantage_step(data, cfg, ACRTracker())
    w0, _ = covariance_weights(old[:4], plain.batch["advantages"][:4], torch.ones(4, 3))
    w1, _ = covariance_weights(old[4:], plain.batch["advantages"][4:], torch.ones(4, 3))
    expected = plain.batch["advantages"] * torch.cat([w0, w1])
    torch.testing.assert_close(data.batch["advantages"], expected)
    assert m["cw_grpo/weight_mean"] == pytest.approx(1.0)


def test_avspo_state_survives_save_and_load(tmp_path):
    cfg = algo("avspo")
    cfg.adv_estimator = "avspo"
    tracker = ACRTracker()
    for groups in ([[1, 1], [0, 0], [1, 0]], [[1, 1], [1, 1], [1, 0]]):
        advantage_step(dataproto(groups), cfg, tracker)
    before = state.state_dict()
    save_state(str(tmp_path / "global_step_2"), tracker, 2)
    after_save, m_after = advantage_step(dataproto([[1, 1], [1, 1], [0, 0]]), cfg, tracker)

    state.reset()
    resumed = ACRTracker()
    assert load_state(str(tmp_path / "global_step_2"), resumed, 2)["global_step"] == 2
    assert state.state_dict() == before and before["avspo"]["step"] == 2
    again, m_again = advantage_step(dataproto([[1, 1], [1, 1], [0, 0]]), cfg, resumed)
    torch.testing.assert_close(again.batch["advantages"], after_save.batch["advantages"])
    assert m_again == m_after
    assert json.loads((tmp_path / "global_step_2" / "rlvr_state.json").read_text())["estimators"]["avspo"]["step"] == 2


def test_trainer_is_registered_by_the_plugin():
    from verl.trainer.ppo.v1 import get_trainer_cls

    cls = get_trainer_cls("rlvr")
    assert cls.__name__ == "RLVRTrainer" and hasattr(cls, "_compute_advantage")


def test_ref_rewards_command_on_precomputed_generations(tmp_path):
    from rlvr_recipes.launch.data import to_verl

    df = to_verl(pd.DataFrame({"problem": ["1+1?", "2+2?"], "answer": ["2", "4"]}), "math500")
    data = tmp_path / "d.parquet"
    df.to_parquet(data)
    gens = tmp_path / "g.jsonl"
    gens.write_text("\n".join(json.dumps(r) for r in [
        {"index": 0, "responses": ["\\boxed{2}", "\\boxed{3}", "2"]},
        {"index": 1, "responses": ["\\boxed{5}", "\\boxed{4}", "\\boxed{4}"]}]))
    ref_main(["--config-name", "aapo", "--data", str(data), "--generations", str(gens), "--output",
              str(tmp_path / "o.parquet"), "--", "actor_rollout_ref.rollout.n=3"])
    out = pd.read_parquet(tmp_path / "o.parquet")
    assert [list(e["ref_rewards"]) for e in out["extra_info"]] == [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    from rlvr_recipes.reward.reference import read_cache_settings

    recorded = read_cache_settings(str(tmp_path / "o.parquet"))  # taken from the recipe, recorded with the cache
    assert recorded["max_response_length"] == 3072 and recorded["temperature"] == 1.0 and recorded["samples"] == 3
    assert recorded["reward_kwargs"] == {"recipe": "accuracy"} and recorded["reward_name"] == "compute_score"


def test_reference_cache_mismatch_is_refused_naming_both(tmp_path, monkeypatch, capsys):
    """The 1.5B AAPO run (format + cosine reward, 3072 tokens) refuses a cache scored with accuracy at 2048 tokens."""
    from rlvr_recipes.launch.data import to_verl
    from rlvr_recipes.launch.ref_rewards import compose_recipe
    from rlvr_recipes.reward.reference import check_training_run, reference_settings, reuse_warning, write_cache

    for k in ("MODEL_PATH", "VAL_FILES"):
        monkeypatch.setenv(k, "/x")
    df = to_verl(pd.DataFrame({"problem": ["1+1?"], "answer": ["2"]}), "math500")
    df["extra_info"] = [{"index": 0, "ref_rewards": [1.0] * 6}]
    path = str(tmp_path / "train.parquet")
    monkeypatch.setenv("TRAIN_FILES", path)
    cached = compose_recipe("aapo", ["data.max_response_length=2048"])
    write_cache(df, path, reference_settings(cached), samples=6)
    run = compose_recipe("aapo", ["reward.custom_reward_function.reward_kwargs.recipe=aapo_1p5b"])
    with pytest.raises(ValueError) as err:
        check_training_run(run, [path])
    msg = str(err.value)
    assert "max_response_length: cache 2048, training run 3072" in msg
    assert "reward_kwargs: cache {'recipe': 'accuracy'}, training run {'recipe': 'aapo_1p5b'}" in msg
    assert check_training_run(cached, [path]) == []  # same settings, M = 6 = G x 1 epoch: accepted, no reuse
    warnings = check_training_run(compose_recipe("aapo", ["data.max_response_length=2048", "trainer.total_epochs=3"]),
                                  [path])
    assert len(warnings) == 1 and "M=6" in warnings[0] and "M >= 18" in warnings[0]
    assert reuse_warning(12, 6, 2) is None and "M >= 13" in reuse_warning(12, 6, 2.1)
    df.to_parquet(path)  # a cache with no record of its settings: refused too
    with pytest.raises(ValueError, match="no record"):
        check_training_run(cached, [path])


def test_the_reward_of_reference_settings_is_the_one_the_config_names():
    """``settings_reward`` loads the reward a composed config names (the CPU config's countdown reward), and without a
    path the recipes' default, this package's math reward: the one loader for the reference cache, the
    ``ref_rewards`` command, ``launch.compare`` and ``task_properties``."""
    from rlvr_recipes.launch.cpu_run import compose, embedded_task
    from rlvr_recipes.reward import countdown, math_reward
    from rlvr_recipes.reward.reference import reference_settings, settings_reward

    settings = reference_settings(compose(list(embedded_task("countdown").overrides)))
    assert settings_reward(settings) is countdown.compute_score
    assert settings_reward({**settings, "reward_path": None}) is math_reward.compute_score


def test_batch_keys_path_matches_plain_grpo_on_single_turn_rows():
    """With TransferQueue keys ({uid}_{session}_{index}), the step uses verl's multi-trajectory GRPO like the stock
    v1 trainer; on single-turn rows it must equal plain GRPO."""
    groups = [[1, 0, 0, 0], [1, 1, 0, 1]]
    plain, _ = advantage_step(dataproto(groups), algo(None), ACRTracker())
    uid = dataproto(groups).non_tensor_batch["uid"]
    keys = [f"{u}_{i}_0" for i, u in enumerate(uid)]
    keyed, m = advantage_step(dataproto(groups), algo(None), ACRTracker(), batch_keys=keys)
    torch.testing.assert_close(keyed.batch["advantages"], plain.batch["advantages"])
    assert m["acr/acr"] == 0.0


def _trainer_on_fake_tq(monkeypatch, lengths, rewards, estimator, step, extra_info=None, extra_fields=None,
                        algorithm=None):
    """An RLVRTrainer whose TransferQueue is a stand-in holding one group of 4 responses ("p0") as the v1 trainer
    stores them: jagged tensors plus uid (and, if given, the prompt's extra_info with each response). Returns the
    trainer, the KVBatchMeta, the fields asked for and what was written back."""
    from omegaconf import OmegaConf
    from tensordict import NonTensorStack, TensorDict
    from verl.trainer.ppo.v1 import get_trainer_cls, trainer_base

    rm = [torch.zeros(n) for n in lengths]
    for r, s in zip(rm, rewards):
        r[-1] = s
    rows = {
        "response_mask": torch.nested.nested_tensor([torch.ones(n) for n in lengths], layout=torch.jagged),
        "rm_scores": torch.nested.nested_tensor(rm, layout=torch.jagged),
        "uid": NonTensorStack(*["p0"] * len(lengths)),
    }
    if extra_info is not None:
        rows["extra_info"] = NonTensorStack(*extra_info)
    if extra_fields is not None:
        rows["extra_fields"] = NonTensorStack(*extra_fields)
    store, calls = {}, {}

    class FakeTQ:
        @staticmethod
        def kv_batch_get(keys, partition_id, select_fields):
            calls["fields"] = list(select_fields)
            return TensorDict({k: v for k, v in rows.items() if k in select_fields}, batch_size=[len(lengths)])

        @staticmethod
        def kv_batch_put(keys, partition_id, fields):
            store.update(fields=fields, keys=keys)
            return "put"

    monkeypatch.setattr(trainer_base, "tq", FakeTQ)
    trainer = object.__new__(get_trainer_cls("rlvr"))
    trainer.acr_tracker, trainer.global_steps = ACRTracker(), step
    trainer.config = OmegaConf.create({
        "algorithm": {"adv_estimator": estimator, "use_kl_in_reward": False, "norm_adv_by_std_in_grpo": True,
                      **(algorithm or {})},
        "actor_rollout_ref": {"rollout": {"n": len(lengths)}},
    })
    n = len(lengths)
    meta = type("Meta", (), {"keys": [f"p0_{i}_0" for i in range(n)], "partition_id": "train", "tags": [{}] * n,
                             "__len__": lambda s: n})()
    return trainer, meta, calls, store


def test_trainer_compute_advantage_reads_and_writes_transfer_queue(monkeypatch):
    """RLVRTrainer._compute_advantage on what the v1 trainer gives it: a KVBatchMeta whose rows are fetched with
    tq.kv_batch_get as jagged (nested) tensors plus uid, and advantages written back with tq.kv_batch_put."""
    lengths = [2, 3, 1, 2]
    trainer, meta, calls, store = _trainer_on_fake_tq(monkeypatch, lengths, [1.0, 0.0, 0.0, 0.0], "grpo", step=1)
    metrics = {}
    assert trainer._compute_advantage(meta, metrics) == "put"
    assert "ref_rewards" not in calls["fields"]
    adv = store["fields"]["advantages"]
    assert [float(a[-1]) for a in adv.unbind()] == pytest.approx([1.5, -0.5, -0.5, -0.5], rel=1e-5)
    assert [a.numel() for a in adv.unbind()] == lengths
    assert metrics["acr/acr"] == 0.0 and metrics["acr/reward_mean"] == pytest.approx(0.25)


def test_content_order_by_hand():
    """Rows by prompt, then by response (each by its hash); equal rows keep their order."""
    prompts = np.array([[7, 0], [5, 6], [7, 0], [5, 6], [5, 6]])
    responses = np.array([[1, 1], [2, 0], [1, 1], [3, 3], [2, 0]])
    order = content_order(prompts, responses)
    # the same multiset of rows from any row order comes out as the same sequence of rows
    for perm in ([4, 3, 2, 1, 0], [1, 0, 3, 2, 4], [2, 4, 0, 1, 3]):
        again = content_order(prompts[perm], responses[perm])
        np.testing.assert_array_equal(prompts[perm][again], prompts[order])
        np.testing.assert_array_equal(responses[perm][again], responses[order])
    blocks = [tuple(p) for p in prompts[order]]
    assert blocks in ([(5, 6)] * 3 + [(7, 0)] * 2, [(7, 0)] * 2 + [(5, 6)] * 3)  # each prompt's rows adjoin
    in_block = token_hash(responses[order[[b == (5, 6) for b in blocks]]])
    assert np.all(np.diff(in_block) >= 0)  # by response within a prompt
    twins = [i for i in order.tolist() if (tuple(prompts[i]), tuple(responses[i])) == ((5, 6), (2, 0))]
    assert twins == [1, 4]  # equal rows keep their order


def test_trainer_orders_the_batch_rows_by_their_tokens(monkeypatch):
    """RLVRTrainer._balance_batch reorders verl's KVBatchMeta by the rows' tokens before verl's balancing: two
    batches holding the same rows in other orders under other keys reach the actor as the same sequence of rows."""
    from tensordict import TensorDict
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.v1 import get_trainer_cls, trainer_base

    prompts = [[3, 4, 5], [3, 4, 5], [9], [9], [3, 4, 5]]
    responses = [[1], [2, 2], [1], [7, 7, 7], [2, 1]]
    store = {}

    class FakeTQ:
        @staticmethod
        def kv_batch_get(keys, partition_id, select_fields):
            rows = [store[k] for k in keys]
            return TensorDict({f: torch.nested.nested_tensor([torch.tensor(r[f]) for r in rows], layout=torch.jagged)
                               for f in select_fields}, batch_size=[len(keys)])

    monkeypatch.setattr(trainer_base, "tq", FakeTQ)
    balanced = []
    monkeypatch.setattr(trainer_base.PPOTrainer, "_balance_batch",
                        lambda self, batch, metrics, **kw: balanced.append(list(batch.keys)) or batch)
    trainer = object.__new__(get_trainer_cls("rlvr"))
    seen = []
    for run, perm in enumerate(([0, 1, 2, 3, 4], [4, 2, 0, 3, 1], [3, 1, 4, 0, 2])):
        keys = [f"run{run}-{i}" for i in perm]  # keys are random strings in verl
        for key, i in zip(keys, perm):
            store[key] = {"prompts": prompts[i], "responses": responses[i]}
        meta = KVBatchMeta(partition_id="train", keys=keys, tags=[{"seq_len": len(prompts[i]) + len(responses[i])}
                                                                  for i in perm])
        out = trainer._balance_batch(meta, {})
        assert out.keys == balanced[-1] and sorted(out.keys) == sorted(keys)
        assert [t["seq_len"] for t in out.tags] == [len(store[k]["prompts"]) + len(store[k]["responses"])
                                                    for k in out.keys]  # tags moved with their keys
        seen.append([(tuple(store[k]["prompts"]), tuple(store[k]["responses"])) for k in out.keys])
    assert seen[0] == seen[1] == seen[2]


@pytest.mark.parametrize("estimator", sorted(VARIANTS_ON_1000))
def test_trainer_runs_each_variant_by_its_name(monkeypatch, estimator):
    """The variants whose real trainer runs are opt-in (tests/test_e2e_cpu.py, RLVR_E2E_ALL=1): the trainer's
    advantage step, given only ``algorithm.adv_estimator``, writes each one's advantages on every token."""
    lengths = [2, 3, 1, 2]
    trainer, meta, calls, store = _trainer_on_fake_tq(monkeypatch, lengths, [1.0, 0.0, 0.0, 0.0], estimator, step=1)
    metrics = {}
    assert trainer._compute_advantage(meta, metrics) == "put"
    adv = store["fields"]["advantages"].unbind()
    assert [a.numel() for a in adv] == lengths
    expected = VARIANTS_ON_1000[estimator]  # hand values (tests/helpers.py)
    assert [a.tolist() for a in adv] == [pytest.approx([e] * n, rel=1e-5) for e, n in zip(expected, lengths)]
    assert metrics["acr/acr"] == 0.0


def test_trainer_compute_advantage_draws_aapo_references_from_extra_info(monkeypatch):
    """For adv_estimator=aapo the extension also fetches ``extra_info`` (stored with each response by verl's agent
    loop) and pairs each response with a draw from the prompt's cache: the same advantages as advantage_step on a
    DataProto carrying that extra_info."""
    rewards = [1.0, 0.0, 1.0, 0.0]
    infos = [{"index": 0, "ref_rewards": [1.0, 0.0, 0.0, 0.0, 1.0]}] * 4
    trainer, meta, calls, store = _trainer_on_fake_tq(monkeypatch, [2, 3, 1, 2], rewards, "aapo", step=3,
                                                      extra_info=infos)
    metrics = {}
    trainer._compute_advantage(meta, metrics)
    assert {"ref_rewards", "extra_info"} <= set(calls["fields"])
    assert "aapo/margin_mean" in metrics

    data = dataproto([rewards])
    data.non_tensor_batch["uid"] = np.array(["p0"] * 4, dtype=object)
    data.non_tensor_batch["extra_info"] = np.array(infos, dtype=object)
    expected, _ = advantage_step(data, algo("aapo"), ACRTracker(), 4, 3)
    got = [float(a[-1]) for a in store["fields"]["advantages"].unbind()]
    assert got == pytest.approx(expected.batch["advantages"][:, 0].tolist(), rel=1e-5)


def test_trainer_draws_aapo_references_with_the_run_seed(monkeypatch):
    """The trainer seeds AAPO's draws with ``data.seed``: each seed gives advantage_step's draws at that seed, two
    seeds draw apart, and an unset seed draws as seed 0 (run_seed)."""
    from rlvr_recipes.trainer.extension import run_seed

    rewards = [1.0, 0.0, 1.0, 0.0]
    infos = [{"index": 0, "ref_rewards": [i / 15 for i in range(16)]}] * 4  # 16 distinct rewards: draws show
    got = {}
    for seed in (None, 0, 7, 8):
        trainer, meta, _, store = _trainer_on_fake_tq(monkeypatch, [2, 3, 1, 2], rewards, "aapo", step=3,
                                                      extra_info=infos)
        if seed is not None:
            trainer.config.data = {"seed": seed}
        assert run_seed(trainer.config) == (seed or 0)
        trainer._compute_advantage(meta, {})
        got[seed] = [float(a[-1]) for a in store["fields"]["advantages"].unbind()]
    data = dataproto([rewards])
    data.non_tensor_batch["uid"] = np.array(["p0"] * 4, dtype=object)
    data.non_tensor_batch["extra_info"] = np.array(infos, dtype=object)
    for seed in (0, 7, 8):
        expected, _ = advantage_step(copy.deepcopy(data), algo("aapo"), ACRTracker(), 4, 3, seed=seed)
        assert got[seed] == pytest.approx(expected.batch["advantages"][:, 0].tolist(), rel=1e-5)
    assert got[None] == got[0] and got[7] != got[8] and got[7] != got[0]


def test_agrae_reads_success_from_reward_extra_info():
    from rlvr_recipes.trainer.extension import reward_extra_values

    rows = [{"reward_extra_info": {"acc": 1.0, "score": 0.5}}, {"reward_extra_info": {"acc": 0.0}}]
    assert reward_extra_values(rows, "acc").tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="response 1 has no reward_extra_info\\['x'\\]"):
        reward_extra_values([{"reward_extra_info": {"x": 1}}, {"reward_extra_info": {}}], "x")
    cfg = algo("agrae", norm_adv_by_std_in_grpo=False, success_key="acc")
    cfg.adv_estimator = "agrae"
    data = dataproto([[1.0, 0.5, -0.5, 0.0]])
    data.non_tensor_batch["success"] = np.array([1.0, 1.0, 0.0, 0.0], dtype=np.float32)
    data, m = advantage_step(data, cfg, ACRTracker())  # same numbers as test_estimators' hand-worked case
    assert data.batch["advantages"][:, 0].tolist() == pytest.approx([0.2651650, 0.0883883, -0.5303301, -0.1767767],
                                                                    rel=1e-5)


def test_acr_describes_the_rollouts_before_dapo_filtering():
    # kept batch: 2 groups, 1 collapsed (ACR 0.5); DAPO dropped 2 more groups, both collapsed by construction:
    # rollouts ACR = (1 + 2) / 4 = 0.75, post-filter 0.5
    _, m = advantage_step(dataproto([[1, 0, 0, 0], [1, 1, 1, 1]]), algo(None), ACRTracker(), filtered_groups=2)
    assert m["acr/acr"] == pytest.approx(0.75) and m["acr/acr_post_filter"] == pytest.approx(0.5)
    assert m["acr/filtered_groups"] == 2.0 and m["acr/acr_100"] == pytest.approx(0.75)
    _, m = advantage_step(dataproto([[1, 0, 0, 0], [1, 1, 1, 1]]), algo(None), ACRTracker())
    assert m["acr/acr"] == m["acr/acr_post_filter"] == 0.5


def test_trainer_gives_agrae_the_accuracy_and_counts_filtered_groups(monkeypatch):
    """agrae_dapo in the trainer: shaped scores in the batch, accuracy in each response's reward_extra_info (as verl's
    dapo reward manager stores it): the extension fetches extra_fields and the advantages are the hand-worked ones of
    test_agrae_reads_success_from_reward_extra_info; verl's DAPO eviction count makes acr/acr the rollouts' ACR."""
    extra = [{"reward_extra_info": {"acc": a}} for a in (1.0, 1.0, 0.0, 0.0)]
    trainer, meta, calls, store = _trainer_on_fake_tq(
        monkeypatch, [2, 2, 2, 2], [1.0, 0.5, -0.5, 0.0], "agrae", step=1, extra_fields=extra,
        algorithm={"norm_adv_by_std_in_grpo": False, "agrae": {"success_key": "acc"}})
    metrics = {"training/filter_groups/evicted_samples": 3}  # what replay_buffer.sample put there this step
    trainer._compute_advantage(meta, metrics)
    assert "extra_fields" in calls["fields"]
    got = [float(a[-1]) for a in store["fields"]["advantages"].unbind()]
    assert got == pytest.approx([0.2651650, 0.0883883, -0.5303301, -0.1767767], rel=1e-5)
    assert metrics["agrae/omega"] == pytest.approx(0.5)
    # 1 kept group, not collapsed; 3 filtered (collapsed by construction): (0 + 3) / 4
    assert metrics["acr/acr_post_filter"] == 0.0 and metrics["acr/acr"] == pytest.approx(0.75)
