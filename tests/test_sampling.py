"""Keyed sampling of the hf rollout (rlvr_recipes/cpu_backend/sampling.py): the hash against a plain-integer
reference, the uniforms' range and independence of the batch, and Gumbel-max draws against the distribution."""

from __future__ import annotations

import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from rlvr_recipes.cpu_backend.sampling import (
    _mix32,
    _mul32,
    keyed_gumbel_choice,
    keyed_uniform,
    request_key,
)

U32 = st.integers(min_value=0, max_value=2**32 - 1)


def _lowbias32_reference(x: int) -> int:
    """lowbias32 on Python integers (unbounded, so no overflow question arises)."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


@given(x=U32, c=U32)
def test_mul32_is_the_product_modulo_two_to_the_32(x, c):
    assert int(_mul32(torch.tensor([x], dtype=torch.int64), c)[0]) == (x * c) % 2**32


@given(x=U32)
def test_mix32_is_lowbias32(x):
    assert int(_mix32(torch.tensor([x], dtype=torch.int64))[0]) == _lowbias32_reference(x)


def test_request_key_changes_with_each_of_its_inputs_and_only_with_them():
    base = request_key(0, 3, [5, 6, 7], 0)
    assert base == request_key(0, 3, [5, 6, 7], 0)
    others = [request_key(1, 3, [5, 6, 7], 0), request_key(0, 4, [5, 6, 7], 0), request_key(0, 3, [5, 6, 8], 0),
              request_key(0, 3, [5, 6, 7], 1), request_key(0, 3, [5, 6], 0), request_key(0, 3, [], 0)]
    assert len({base, *others}) == 1 + len(others)
    assert all(0 <= w < 2**32 for key in others for w in key)


def test_uniforms_lie_in_the_open_interval_and_belong_to_their_row_alone():
    keys = torch.tensor([request_key(0, 0, [i], 0) for i in range(64)], dtype=torch.int64)
    u = keyed_uniform(keys, 0, 50)
    assert u.shape == (64, 50) and bool((u > 0).all() and (u < 1).all())
    # the same row alone, or in another batch in another place, gets the same uniforms
    torch.testing.assert_close(keyed_uniform(keys[5:6], 0, 50), u[5:6], rtol=0, atol=0)
    torch.testing.assert_close(keyed_uniform(keys.flip(0), 0, 50).flip(0), u, rtol=0, atol=0)
    # another position gives other uniforms
    assert not torch.equal(keyed_uniform(keys, 1, 50), u)
    # mean 1/2 and variance 1/12 over 3200 draws (std of the mean 0.005)
    assert abs(float(u.mean()) - 0.5) < 0.02 and abs(float(u.var()) - 1 / 12) < 0.01


def test_uniforms_of_neighbouring_keys_and_tokens_are_uncorrelated():
    keys = torch.tensor([request_key(0, 0, [1, 2], k) for k in range(2000)], dtype=torch.int64)
    u = keyed_uniform(keys, 0, 2)
    r_tokens = float(torch.corrcoef(u.T)[0, 1])
    r_positions = float(torch.corrcoef(torch.stack([u[:, 0], keyed_uniform(keys, 1, 2)[:, 0]]))[0, 1])
    assert abs(r_tokens) < 0.08 and abs(r_positions) < 0.08  # 3.5 standard errors of r at n = 2000


def test_gumbel_max_draws_follow_the_distribution_and_never_a_masked_token():
    n = 40_000
    keys = torch.tensor([request_key(7, 0, [3], k) for k in range(n)], dtype=torch.int64)
    probs = torch.tensor([0.5, 0.3, 0.2, 0.0])
    log_probs = torch.log(probs).expand(n, 4)  # log 0 = -inf: the masked token
    counts = torch.bincount(keyed_gumbel_choice(log_probs, keys, 0), minlength=4).double()
    assert counts[3] == 0
    freq = counts / n
    for p, f in zip(probs[:3].tolist(), freq[:3].tolist()):
        assert abs(f - p) < 4 * math.sqrt(p * (1 - p) / n)  # within 4 standard errors (about 0.01)
    # logits need not be normalised: a shift leaves every draw as it was
    assert torch.equal(keyed_gumbel_choice(log_probs + 3.0, keys, 0), keyed_gumbel_choice(log_probs, keys, 0))
