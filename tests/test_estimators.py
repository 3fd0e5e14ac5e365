"""Each registered estimator against numbers worked out by hand from the papers' equations.

Hand values use the group ``[1, 0, 0, 0]`` (p = 1/4) beside collapsed groups. With verl's unbiased std the GRPO base
of ``[1, 0, 0, 0]`` is ``[1.5, -0.5, -0.5, -0.5]`` (mean 1/4, std 1/2); Dr.GRPO's is ``[0.75, -0.25, -0.25, -0.25]``.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import verl  # noqa: F401
from rlvr_recipes.advantage import state
from rlvr_recipes.advantage.options import OptionError
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

from tests.helpers import VARIANTS_ON_1000, algo, batch, run

ALL = [
    "agrae",
    "agrae_pos_dominant",
    "agrae_neg_dominant",
    "agrae_hard_focused",
    "agrae_easy_focused",
    "avspo",
    "aapo",
    "grpo_n",
    "grpo_pos_only",
    "w_reinforce",
]
GRPO_1000 = [1.5, -0.5, -0.5, -0.5]


def call(name, groups, config=None):
    extra = {"ref_rewards": torch.zeros(sum(len(g) for g in groups))} if name == "aapo" else {}
    return run(name, groups, config, **extra)


def test_every_name_is_registered():
    from rlvr_recipes.advantage.estimators import ESTIMATORS

    assert set(ALL) == set(ESTIMATORS)
    assert set(ALL) <= set(ADV_ESTIMATOR_REGISTRY)


# ---------------------------------------------------------------------------------------------------- A-GRAE


def test_agrae_by_hand():
    # omega = 5/8 (Eq. 11); p = 1/4 for group 0; sample weight (Eq. 12) = 0.625/(2*0.5) + 0.375/(2*sqrt(0.75))
    w = 0.625 + 0.375 / (2 * math.sqrt(0.75))
    adv = call("agrae", [[1, 0, 0, 0], [1, 1, 1, 1]])
    # group level (Eq. 13): positives times min(1, omega/alpha) = 0.625
    expected = [1.5 * w * 0.625, -0.5 * w, -0.5 * w, -0.5 * w, 0, 0, 0, 0]
    assert adv.tolist() == pytest.approx(expected, rel=1e-5)
    assert expected[0] == pytest.approx(0.7889122, rel=1e-6)
    assert state.LAST_METRICS["agrae/omega"] == pytest.approx(0.625)
    assert state.LAST_METRICS["agrae/pos_scale"] == pytest.approx(0.625)


def test_agrae_levels_switch_independently():
    groups = [[1, 0, 0, 0], [1, 1, 1, 1]]
    w = 0.625 + 0.375 / (2 * math.sqrt(0.75))
    sample_only = call("agrae", groups, algo("agrae", group_level=False))
    assert sample_only[:4].tolist() == pytest.approx([1.5 * w, -0.5 * w, -0.5 * w, -0.5 * w], rel=1e-5)
    group_only = call("agrae", groups, algo("agrae", sample_level=False, alpha=0.5))
    # omega/alpha = 1.25 -> min(1, .) = 1: no suppression
    assert group_only[:4].tolist() == pytest.approx(GRPO_1000, rel=1e-5)
    group_only = call("agrae", groups, algo("agrae", sample_level=False, alpha=1.0))
    assert group_only[:4].tolist() == pytest.approx([1.5 * 0.625, -0.5, -0.5, -0.5], rel=1e-5)
    neither = call("agrae", groups, algo("agrae", sample_level=False, group_level=False))
    assert neither[:4].tolist() == pytest.approx(GRPO_1000, rel=1e-5)


def test_agrae_on_dr_grpo_base():
    w = 0.625 + 0.375 / (2 * math.sqrt(0.75))
    adv = call("agrae", [[1, 0, 0, 0], [1, 1, 1, 1]], algo("agrae", norm_adv_by_std_in_grpo=False))
    assert adv[:4].tolist() == pytest.approx([0.75 * w * 0.625, -0.25 * w, -0.25 * w, -0.25 * w], rel=1e-5)


@pytest.mark.parametrize("name", [n for n in VARIANTS_ON_1000 if n.startswith("agrae_")])
def test_agrae_table1_controls_by_hand(name):
    adv = call(name, [[1, 0, 0, 0], [0, 0, 0, 0]])
    assert adv[:4].tolist() == pytest.approx(VARIANTS_ON_1000[name], rel=1e-5)
    assert adv[4:].tolist() == [0.0] * 4


def test_agrae_variant_option_matches_named_estimator():
    groups = [[1, 0, 0, 1, 0], [0.0, 1.0, 1.0, 1.0, 1.0]]
    named = call("agrae_hard_focused", groups)
    via_option = call("agrae", groups, algo("agrae", variant="hard_focused", gamma=0.5))
    assert torch.equal(named, via_option)


def test_agrae_rescales_reward_range():
    # rewards in [-1, 1] map to [0, 1]: same advantages as the binary case up to the base's scale
    unit = call("agrae", [[1, 0, 0, 0], [1, 1, 1, 1]], algo("agrae", group_level=False, ddof=0))
    signed = call("agrae", [[1, -1, -1, -1], [1, 1, 1, 1]], algo("agrae", group_level=False, ddof=0, reward_range=[-1, 1]))
    assert signed.tolist() == pytest.approx(unit.tolist(), rel=1e-5)
    with pytest.raises(ValueError, match=r"algorithm\.agrae\.reward_range"):
        call("agrae", [[2.0, 0.0]])


@pytest.mark.parametrize(
    "options, key",
    [
        ({"alpha": 0.0}, "algorithm.agrae.alpha"),
        ({"alpha": -1.0}, "algorithm.agrae.alpha"),
        ({"alpha": 1.5}, "algorithm.agrae.alpha"),
        ({"variant": "hardest"}, "algorithm.agrae.variant"),
        ({"reward_range": [1.0, 0.0]}, "algorithm.agrae.reward_range"),
        ({"alhpa": 0.5}, "algorithm.agrae.alhpa"),
    ],
)
def test_agrae_bad_options_name_the_key(options, key):
    with pytest.raises(OptionError, match=key.replace(".", r"\.")):
        call("agrae", [[1, 0]], algo("agrae", **options))


@settings(max_examples=80, deadline=None)
@given(
    g=st.integers(2, 16),
    data=st.data(),
)
def test_grpo_symmetry_identities_eq5_eq10(g, data):
    """A-GRAE paper Eq. 5 and Eq. 10 on the GRPO base with population std and binary rewards."""
    c = data.draw(st.integers(1, g - 1))
    rewards = [1.0] * c + [0.0] * (g - c)
    cfg = algo("agrae", sample_level=False, group_level=False, ddof=0, epsilon=0.0)
    adv = call("agrae", [rewards], cfg)
    pos, neg = adv[adv > 0].abs().sum().item(), adv[adv < 0].abs().sum().item()
    p = c / g
    assert pos == pytest.approx(neg, rel=1e-5)  # Eq. 5
    assert adv.abs().sum().item() == pytest.approx(2 * g * math.sqrt(p * (1 - p)), rel=1e-5)  # Eq. 10
    # Table 1: hard-focused total |A| is gamma * 2G sqrt(1-p) ... i.e. G sqrt(1-p) with gamma = 0.5
    hard = call("agrae", [rewards], algo("agrae", variant="hard_focused", ddof=0, epsilon=0.0))
    assert hard.abs().sum().item() == pytest.approx(g * math.sqrt(1 - p), rel=1e-5)
    easy = call("agrae", [rewards], algo("agrae", variant="easy_focused", ddof=0, epsilon=0.0))
    assert easy.abs().sum().item() == pytest.approx(g * math.sqrt(p), rel=1e-5)


@settings(max_examples=60, deadline=None)
@given(g=st.integers(2, 16), data=st.data())
def test_agrae_sample_level_total_weight_theorem2(g, data):
    """Eq. 12 x Eq. 10: sum |A| = G * (omega sqrt(1-p) + (1-omega) sqrt(p)) for one binary group."""
    c = data.draw(st.integers(1, g - 1))
    rewards = [1.0] * c + [0.0] * (g - c)
    adv = call("agrae", [rewards], algo("agrae", group_level=False, ddof=0, epsilon=0.0))
    p = omega = c / g
    assert adv.abs().sum().item() == pytest.approx(g * (omega * math.sqrt(1 - p) + (1 - omega) * math.sqrt(p)), rel=1e-5)


# ---------------------------------------------------------------------------------------------------- AVSPO

COLLAPSED_BATCH = [[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0]]  # ACR = 2/3 > tau_adapt = 0.5: triggers


def test_avspo_by_hand_stratified():
    # K = max(1, min(4, ceil(4 * sqrt(2/3)))) = 4; virtual rewards 1, .75, .5, .25 for the all-one group:
    # augmented mean 6.5/8 = 0.8125, squared deviations 0.140625 + 0.453125 = 0.59375, unbiased var 0.59375/7
    adv = call("avspo", COLLAPSED_BATCH)
    a = 0.1875 / (math.sqrt(0.59375 / 7) + 1e-6)
    assert adv[:4].tolist() == pytest.approx([a] * 4, rel=1e-5)
    assert adv[0].item() == pytest.approx(0.643797, rel=1e-5)
    assert adv[4:8].tolist() == [0.0] * 4  # r_max = 0: virtual rewards are 0, the group stays collapsed
    assert adv[8:].tolist() == pytest.approx(GRPO_1000, rel=1e-5)  # untouched group keeps its GRPO advantage
    m = state.LAST_METRICS
    assert m["avspo/triggered"] == 1.0 and m["avspo/k"] == 4.0 and m["avspo/acr"] == pytest.approx(2 / 3)
    assert m["avspo/tau_adapt"] == 0.5 and m["avspo/augmented_frac"] == pytest.approx(2 / 3)


def test_avspo_population_std_and_dr_grpo_base():
    adv = call("avspo", COLLAPSED_BATCH, algo("avspo", ddof=0))
    assert adv[0].item() == pytest.approx(0.1875 / (math.sqrt(0.59375 / 8) + 1e-6), rel=1e-5)
    state.reset()
    adv = call("avspo", COLLAPSED_BATCH, algo("avspo", norm_adv_by_std_in_grpo=False))
    assert adv[:4].tolist() == pytest.approx([0.1875] * 4, rel=1e-5)
    assert adv[8:].tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25], rel=1e-5)


@pytest.mark.parametrize(
    "options, first_group",
    [
        # App. C.1 fixed partial credit: four virtual 0.5s -> mean 0.75, sq. dev. 8 * 0.0625, unbiased var 0.5/7
        ({"virtual_rewards": "half"}, 0.25 / (math.sqrt(0.5 / 7) + 1e-6)),
        # App. C.4 fixed K = 2: virtual 1, 0.5 -> mean 5.5/6, sq. dev. 0.2083333, unbiased var /5
        ({"fixed_k": 2}, (1 - 5.5 / 6) / (math.sqrt((5 * (1 / 12) ** 2 + (5 / 12) ** 2) / 5) + 1e-6)),
        # K = 1 stratified gives r_v1 = r_max: no diversity restored
        ({"fixed_k": 1}, 0.0),
    ],
)
def test_avspo_ablations_by_hand(options, first_group):
    adv = call("avspo", COLLAPSED_BATCH, algo("avspo", **options))
    assert adv[0].item() == pytest.approx(first_group, rel=1e-5, abs=1e-6)


def test_avspo_fixed_ceiling_lifts_all_zero_groups():
    adv = call("avspo", COLLAPSED_BATCH, algo("avspo", reward_ceiling=1.0))
    # all-zero group + virtual 1, .75, .5, .25: mean 0.3125, sq. dev. 0.390625 + 0.703125, unbiased var /7
    assert adv[4:8].tolist() == pytest.approx([-0.3125 / (math.sqrt(1.09375 / 7) + 1e-6)] * 4, rel=1e-5)


def test_avspo_uniform_ablation_is_seeded_and_bounded():
    a = call("avspo", COLLAPSED_BATCH, algo("avspo", virtual_rewards="uniform", seed=3))
    state.reset()
    b = call("avspo", COLLAPSED_BATCH, algo("avspo", virtual_rewards="uniform", seed=3))
    assert torch.equal(a, b)
    assert (a[:4] > 0).all()  # U[0, 1) draws lie below the all-one rewards


def test_avspo_without_trigger_equals_grpo_exactly():
    groups = [[1, 1, 1, 1], [1, 0, 0, 0], [0, 1, 1, 0]]  # ACR = 1/3 <= 0.5
    grpo = call("agrae", groups, algo("agrae", sample_level=False, group_level=False))
    assert torch.equal(call("avspo", groups), grpo)
    state.reset()
    # a fixed threshold above the ACR never triggers either (App. C.3)
    assert torch.equal(call("avspo", COLLAPSED_BATCH, algo("avspo", fixed_threshold=0.7))[:4], torch.zeros(4))


def test_avspo_threshold_over_several_steps():
    """Eq. 12: tau += eta * sign(J_t - J_{t-1}) * (ACR_t - tau); first step unchanged; clipped to the bounds."""
    tau = lambda: state.get_state("avspo", state.AVSPOState).tau_adapt  # noqa: E731
    call("avspo", COLLAPSED_BATCH)  # J = 5/12, ACR = 2/3
    assert tau() == 0.5
    call("avspo", [[1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0]])  # J = 1/2 up, ACR = 2/3
    assert tau() == pytest.approx(0.5 + 0.01 * (2 / 3 - 0.5))
    t2 = tau()
    assert state.LAST_METRICS["avspo/tau_adapt"] == 0.5  # the threshold *used* at this step
    call("avspo", [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])  # J = 0 down, ACR = 1
    assert tau() == pytest.approx(t2 - 0.01 * (1 - t2))
    t3 = tau()
    call("avspo", [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])  # J unchanged: sign(0) = 0
    assert tau() == t3
    assert state.get_state("avspo", state.AVSPOState).step == 4

    state.reset()
    cfg = algo("avspo", eta=10.0)
    call("avspo", [[0, 0], [1, 0]], cfg)
    call("avspo", [[1, 1], [1, 1]], cfg)  # J up, ACR = 1: 0.5 + 10 * 0.5 -> clipped to 0.9
    assert tau() == 0.9
    call("avspo", [[0, 0], [0, 1]], cfg)  # J down, ACR = 0.5: 0.9 - 10 * (0.5 - 0.9) = 4.9 -> 0.9
    assert tau() == 0.9
    call("avspo", [[0, 0], [0, 0]], cfg)  # J down, ACR = 1: 0.9 - 10 * 0.1 = -0.1 -> 0.1
    assert tau() == 0.1


def test_avspo_state_round_trips():
    call("avspo", COLLAPSED_BATCH)
    call("avspo", [[1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0]])
    saved = state.state_dict()
    after_save = call("avspo", COLLAPSED_BATCH)
    state.reset()
    state.load_state_dict(saved)
    assert torch.equal(call("avspo", COLLAPSED_BATCH), after_save)


@pytest.mark.parametrize(
    "options, key",
    [
        ({"tau_bounds": [0.9, 0.1]}, "tau_bounds"),
        ({"tau_init": 0.95}, "tau_init"),
        ({"virtual_rewards": "gaussian"}, "virtual_rewards"),
        ({"fixed_k": 0}, "fixed_k"),
        ({"alpha": 0}, "alpha"),
    ],
)
def test_avspo_bad_options_name_the_key(options, key):
    with pytest.raises(OptionError, match=rf"algorithm\.avspo\.{key}"):
        call("avspo", [[1, 0]], algo("avspo", **options))


# ---------------------------------------------------------------------------------------------------- AAPO


def test_aapo_by_hand():
    ref = torch.tensor([0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    adv = run("aapo", [[1, 0, 0, 0], [1, 1, 1, 1]], algo("aapo", group_token_norm=False), ref_rewards=ref)
    # margins 1, 0, -1, 0 | 0, 0, 1, 0 clipped to [-0.2, 0.28] and added to the GRPO base
    assert adv.tolist() == pytest.approx([1.78, -0.5, -0.7, -0.5, 0.0, 0.0, 0.28, 0.0], rel=1e-5)
    assert state.LAST_METRICS["aapo/margin_clip_frac"] == pytest.approx(3 / 8)


def test_aapo_needs_reference_rewards():
    with pytest.raises(ValueError, match="ref_rewards"):
        run("aapo", [[1, 0]])
    with pytest.raises(ValueError, match="ref_rewards has 3 entries"):
        run("aapo", [[1, 0]], ref_rewards=torch.zeros(3))
    with pytest.raises(ValueError, match="reference reward for sample 1"):
        run("aapo", [[1, 0]], ref_rewards=torch.tensor([0.0, float("nan")]))
    with pytest.raises(OptionError, match=r"algorithm\.aapo\.delta_low"):
        run("aapo", [[1, 0]], algo("aapo", delta_low=0.5, delta_high=0.1), ref_rewards=torch.zeros(2))


def test_aapo_group_token_norm_makes_token_mean_equal_eq4():
    """With the folded normaliser, verl's gpg/aapo loss under token-mean equals Eq. 4: the mean over groups of
    each group's token sum divided by that group's token count."""
    from types import SimpleNamespace

    from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn

    tlr = torch.zeros(4, 3)
    tlr[:, 0] = torch.tensor([1.0, 0.0, 0.0, 1.0])
    mask = torch.tensor([[1, 0, 0], [1, 0, 0], [1, 1, 1], [1, 1, 1]], dtype=torch.float32)
    uid = np.array(["a", "a", "b", "b"], dtype=object)
    ref = torch.tensor([0.0, 0.0, 1.0, 0.0])
    adv, _ = get_adv_estimator_fn("aapo")(tlr, mask, uid, config=None, ref_rewards=ref)
    log_prob = -torch.arange(1, 13, dtype=torch.float32).reshape(4, 3) / 10
    loss, _ = get_policy_loss_fn("aapo")(
        log_prob, log_prob, adv, mask, "token-mean", SimpleNamespace(global_batch_info={})
    )
    plain, _ = get_adv_estimator_fn("aapo")(tlr, mask, uid, config=algo("aapo", group_token_norm=False), ref_rewards=ref)
    a = plain[:, 0]
    per_token = -log_prob * a.unsqueeze(-1) * mask
    eq4 = 0.5 * (per_token[:2].sum() / 2 + per_token[2:].sum() / 6)
    assert loss.item() == pytest.approx(eq4.item(), rel=1e-5)


# ---------------------------------------------------------------------------------------------------- sign filters


def test_grpo_n_pos_only_and_w_reinforce_by_hand():
    groups = [[1, 0, 0, 0], [1, 1, 1, 1]]
    assert call("grpo_n", groups).tolist() == pytest.approx([0, -0.5, -0.5, -0.5, 0, 0, 0, 0], rel=1e-5)
    assert call("grpo_pos_only", groups).tolist() == pytest.approx([1.5, 0, 0, 0, 0, 0, 0, 0], rel=1e-5)
    drgrpo_n = call("grpo_n", groups, algo("grpo_n", norm_adv_by_std_in_grpo=False))
    assert drgrpo_n.tolist() == pytest.approx([0, -0.25, -0.25, -0.25, 0, 0, 0, 0], rel=1e-5)
    assert call("w_reinforce", groups).tolist() == pytest.approx([0.1, -1, -1, -1, 0.1, 0.1, 0.1, 0.1])
    half = call("w_reinforce", [[0.5, 0.75]], algo("w_reinforce", lam=0.5))
    assert half.tolist() == pytest.approx([0.0, 0.25])


# ---------------------------------------------------------------------------------------------------- all estimators


@pytest.mark.parametrize("name", ALL)
def test_degenerate_groups(name):
    """G = 1, all-equal and all-zero groups: finite, and zero for the group-relative estimators."""
    for groups in ([[1.0]], [[0.3, 0.3, 0.3]], [[0.0, 0.0], [0.0, 0.0]], [[1.0], [0.0, 1.0]]):
        state.reset()
        adv = call(name, groups)
        assert torch.isfinite(adv).all()
        if name == "avspo" and groups == [[0.3, 0.3, 0.3]]:
            # ACR = 1 triggers: virtual rewards below 0.3 make the real samples look better than average
            assert (adv > 0).all()
        elif name not in ("w_reinforce", "aapo") and groups != [[1.0], [0.0, 1.0]]:
            assert adv.abs().max().item() == 0.0, (name, groups)


@pytest.mark.parametrize("name", ALL)
def test_nan_reward_is_an_error_naming_the_sample(name):
    with pytest.raises(ValueError, match="sample 3"):
        call(name, [[1.0, 0.0], [0.0, float("nan")]])


@pytest.mark.parametrize("name", [n for n in ALL if n != "w_reinforce"])
def test_group_relative_estimators_need_uid(name):
    import verl  # noqa: F401
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    tlr, mask, _ = batch([[1.0, 0.0]])
    kwargs = {"ref_rewards": torch.zeros(2)} if name == "aapo" else {}
    with pytest.raises(ValueError, match="uid"):
        get_adv_estimator_fn(name)(token_level_rewards=tlr, response_mask=mask, config=None, **kwargs)


@settings(max_examples=40, deadline=None)
@given(
    groups=st.lists(
        st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1, width=32), min_size=1, max_size=10),
        min_size=1,
        max_size=10,
    ),
    norm=st.booleans(),
    name=st.sampled_from(ALL),
)
def test_no_nan_or_inf_on_any_group(groups, norm, name):
    state.reset()
    adv = call(name, groups, algo(None, norm_adv_by_std_in_grpo=norm))
    assert torch.isfinite(adv).all()


@settings(max_examples=40, deadline=None)
@given(
    groups=st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=8), min_size=1, max_size=8),
)
def test_sign_modifiers_partition_grpo(groups):
    grpo = call("agrae", groups, algo("agrae", sample_level=False, group_level=False))
    neg, pos = call("grpo_n", groups), call("grpo_pos_only", groups)
    assert (neg <= 0).all() and (pos >= 0).all()
    torch.testing.assert_close(neg + pos, grpo)


def test_agrae_p_and_omega_from_accuracy_under_shaped_rewards():
    # DAPO-shaped scores of one group: correct 1.0, correct but overlong 0.5, wrong and overlong -0.5, wrong 0.0;
    # accuracy [1, 1, 0, 0]: p = omega = 1/2. Dr.GRPO base (r - mean, mean 0.25): [0.75, 0.25, -0.75, -0.25].
    # Eq. 12: 0.5/(2 sqrt 0.5) + 0.5/(2 sqrt 0.5) = 1/sqrt(2); Eq. 13: positives x min(1, 0.5/1) = 0.5.
    cfg = algo("agrae", norm_adv_by_std_in_grpo=False, success_key="acc")
    cfg.adv_estimator = "agrae"
    adv = run("agrae", [[1.0, 0.5, -0.5, 0.0]], cfg, success=np.array([1.0, 1.0, 0.0, 0.0]))
    assert adv.tolist() == pytest.approx([0.2651650, 0.0883883, -0.5303301, -0.1767767], rel=1e-5)
    assert state.LAST_METRICS["agrae/omega"] == pytest.approx(0.5)
    # from the shaped score itself, -0.5 lies outside the reward range: the error the recipe used to hit
    with pytest.raises(ValueError, match="reward_range"):
        run("agrae", [[1.0, 0.5, -0.5, 0.0]], algo("agrae", norm_adv_by_std_in_grpo=False))
    # success_key set but no success passed: an error naming the key, not a silent fall-back to the score
    with pytest.raises(ValueError, match="success_key"):
        run("agrae", [[1.0, 0.0]], cfg)
    with pytest.raises(ValueError, match="success_key"):  # success must be a rate in [0, 1]
        run("agrae", [[1.0, 0.0]], cfg, success=np.array([2.0, 0.0]))
