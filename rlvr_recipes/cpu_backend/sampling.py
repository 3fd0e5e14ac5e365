"""Sampling whose draws belong to the request, not to the batch it happens to share.

The hf rollout (:mod:`rlvr_recipes.cpu_backend.rollout`) batches the agent loop's concurrent requests as they arrive,
so which requests share a ``generate`` call, and in what order, depends on timing. With one random stream for the
whole call (``torch.multinomial`` on the global generator), the draws a response gets depend on that timing too, and
two runs of one seed sample different answers from their first step on. Here every request carries a key of its own
(:func:`request_key`: the run's seed, the trainer step, the prompt and how many times this prompt was requested
before in the step), and the token at position ``t`` is drawn by the Gumbel-max trick from uniforms that are a hash
of (key, ``t``, token id) (:func:`keyed_uniform`): ``argmax_v (log p_v - log(-log u_v))`` is a sample of ``p``
whatever the other rows of the batch are.

Why a hash and not a ``torch.Generator`` per row: a generator per row needs a Python loop over the batch at every
token; the hash is a few integer operations on the whole ``(batch, vocab)`` tensor. Its mixing function is
``lowbias32`` (C. Wellons' hash-prospector, bias 0.17), written with 16-bit partial products so that no product
leaves int64.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Sequence

import torch
from transformers import (LogitsProcessor, LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper,
                          TopPLogitsWarper)

_MASK32 = 0xFFFFFFFF


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """``x * c mod 2**32`` for ``0 <= x < 2**32`` without overflowing int64 (two 16-bit halves of ``c``)."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + (((x * hi) & 0xFFFF) << 16)) & _MASK32


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """``lowbias32``: a bijection of 32-bit integers (held in int64) whose output bits all depend on every input bit."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def request_key(seed: int, step: int, prompt_ids: Sequence[int], occurrence: int) -> tuple[int, int]:
    """The 64-bit key (two 32-bit words) of one request's random stream.

    Args:
        seed: the rollout's seed (``actor_rollout_ref.rollout.seed`` plus the replica's rank).
        step: the trainer step whose weights the server holds (-1 before the first weight sync).
        prompt_ids: the prompt's token ids.
        occurrence: how many requests with this prompt the server received before in this step (0, 1, .., n-1 for
            the ``n`` samples of a group). The samples of a group are exchangeable, so which of them gets which
            occurrence does not change the group's answers, only their order.
    """
    head = struct.pack("<qqq", int(seed), int(step), int(occurrence))
    body = struct.pack(f"<{len(prompt_ids)}q", *(int(t) for t in prompt_ids))
    digest = hashlib.blake2b(head + body, digest_size=8).digest()
    lo, hi = struct.unpack("<II", digest)
    return lo, hi


def keyed_uniform(keys: torch.Tensor, position: int, vocab_size: int) -> torch.Tensor:
    """Uniforms in (0, 1), one per (row, token id), that depend only on the row's key and the position.

    Args:
        keys: ``(batch, 2)`` int64, each row a :func:`request_key`.
        position: index of the generated token (0 for the first).
        vocab_size: ``V``.

    Returns:
        ``(batch, V)`` float64, ``(h + 0.5) / 2**32`` for a 32-bit hash ``h`` of (key, position, token id).
    """
    k0 = keys[:, 0:1].to(torch.int64) & _MASK32
    k1 = keys[:, 1:2].to(torch.int64) & _MASK32
    row = _mix32(k0 ^ _mix32(k1 ^ _mix32(torch.tensor(position, dtype=torch.int64) & _MASK32)))
    token = _mix32(torch.arange(vocab_size, dtype=torch.int64) ^ 0x9E3779B9)
    h = _mix32(row ^ token[None, :])  # (batch, V)
    return (h.to(torch.float64) + 0.5) / 2.0**32


def keyed_gumbel_choice(log_probs: torch.Tensor, keys: torch.Tensor, position: int) -> torch.Tensor:
    """One token per row, a sample of ``softmax(log_probs)`` drawn with the row's own uniforms (Gumbel-max).

    Args:
        log_probs: ``(batch, V)`` log-probabilities (or any logits; ``-inf`` marks tokens that cannot be drawn).
        keys: ``(batch, 2)`` int64 request keys.
        position: index of the generated token.

    Returns:
        ``(batch,)`` int64 token ids.
    """
    gumbel = -torch.log(-torch.log(keyed_uniform(keys, position, log_probs.shape[-1])))
    return torch.argmax(log_probs.to(torch.float64) + gumbel, dim=-1)


class KeyedSampler(LogitsProcessor):
    """The last logits processor of a sampled ``generate`` call run in greedy mode: draws each row's token from its
    own keyed stream (:func:`~rlvr_recipes.cpu_backend.sampling.keyed_gumbel_choice`) out of the processed scores,
    records the token's processed log-probability, and leaves only that token for ``generate``'s argmax."""

    def __init__(self, noise_keys: torch.Tensor, prompt_width: int) -> None:
        self.noise_keys = noise_keys
        self.prompt_width = prompt_width
        self.log_probs: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        log_probs = torch.log_softmax(scores.float(), dim=-1)
        choice = keyed_gumbel_choice(log_probs, self.noise_keys, input_ids.shape[1] - self.prompt_width)
        self.log_probs.append(log_probs.gather(-1, choice[:, None]).squeeze(-1))
        forced = torch.full_like(scores, float("-inf"))
        return forced.scatter_(-1, choice[:, None], 0.0)


def keyed_sampling(noise_keys: list[tuple[int, int]], prompt_width: int, temperature: float = 1.0, top_k: int = -1,
                   top_p: float = 1.0) -> tuple[LogitsProcessorList, KeyedSampler]:
    """The logits processors of a sampled ``generate`` call whose rows draw from their own keyed streams: the warpers
    (temperature, top-k, top-p, in vLLM's and ``generate``'s order; ``top_k`` <= 0 and ``top_p`` 1 are off), then
    the :class:`KeyedSampler` (returned as well: it holds the drawn tokens' processed log-probs). Pass the list as
    ``logits_processor`` with ``do_sample=False``."""
    if temperature <= 0:
        raise ValueError(f"keyed sampling needs a temperature above 0, got {temperature}")
    sampler = KeyedSampler(torch.tensor(noise_keys, dtype=torch.int64), prompt_width)
    processors: list[LogitsProcessor] = []
    if temperature != 1.0:
        processors.append(TemperatureLogitsWarper(temperature))
    if top_k > 0:
        processors.append(TopKLogitsWarper(top_k=top_k))
    if top_p < 1.0:
        processors.append(TopPLogitsWarper(top_p=top_p))
    return LogitsProcessorList([*processors, sampler]), sampler
