"""The rollout server of the ``hf`` rollout: a Hugging Face causal LM answering verl's ``generate`` calls in batches.

:class:`HFServer` runs as one Ray actor per rollout replica (:class:`rlvr_recipes.cpu_backend.rollout.HFReplica`
starts it). This module imports torch and ``transformers`` only, never verl: a Ray worker that imports verl spends
about 9 s of a 2-core machine on it (``python -X importtime -c "import verl.single_controller.ray"``), and the
server starts anew with every run of a comparison. So the replica hands the server plain dicts
(:func:`server_settings`), and the server answers with :class:`ServerOutput`, which becomes verl's ``TokenOutput``
where it is unpickled (in the agent-loop worker, which has verl loaded).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from rlvr_recipes.cpu_backend.sampling import keyed_sampling, request_key

_DTYPES = {
    "float32": torch.float32, "fp32": torch.float32,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float16": torch.float16, "fp16": torch.float16,
}


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    """``cfg.key`` for dataclasses, DictConfigs and dicts alike."""
    if isinstance(cfg, dict):
        return cfg.get(key, default)
    if hasattr(cfg, "get"):
        try:
            return cfg.get(key, default)
        except Exception:  # dataclass configs with a restrictive get
            pass
    return getattr(cfg, key, default)


@dataclass(frozen=True)
class SamplingKey:
    """The sampling parameters a batch of requests must share to run as one ``generate`` call."""

    temperature: float
    top_p: float
    top_k: int
    repetition_penalty: float
    max_tokens: int
    logprobs: bool
    ignore_eos: bool


@dataclass
class _Request:
    prompt_ids: list[int]
    key: SamplingKey
    noise_key: tuple[int, int]
    future: asyncio.Future = field(repr=False)


def _token_output(fields: dict[str, Any]) -> Any:
    """verl's ``TokenOutput`` with ``fields``: what a :class:`ServerOutput` becomes when it is unpickled."""
    from verl.workers.rollout.replica import TokenOutput

    return TokenOutput(**fields)


@dataclass
class ServerOutput:
    """One request's answer, with the fields of verl's ``TokenOutput`` that the server fills. It is pickled as that
    ``TokenOutput`` (:func:`_token_output`), so the agent loop that awaits it through Ray gets verl's class, while
    the server itself needs no verl."""

    token_ids: list[int]
    log_probs: Optional[list[float]] = None
    stop_reason: Optional[str] = None
    extra_fields: dict[str, Any] = field(default_factory=dict)

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        return _token_output, (dict(token_ids=self.token_ids, log_probs=self.log_probs, stop_reason=self.stop_reason,
                                    extra_fields=self.extra_fields),)


#: The rollout config's fields the server reads (``actor_rollout_ref.rollout``), and the model config's.
ROLLOUT_FIELDS = ("engine_kwargs", "dtype", "prompt_length", "response_length", "max_model_len", "max_num_seqs",
                  "seed", "ignore_eos")
MODEL_FIELDS = ("local_path", "path", "override_config", "trust_remote_code")


def _plain(value: Any) -> Any:
    """``value`` as plain Python (dicts, lists, scalars): DictConfigs and dataclasses of verl's config included."""
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


def _fields(cfg: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """The ``keys`` of ``cfg`` that are set, as plain Python."""
    return {k: _plain(v) for k in keys if (v := _get(cfg, k)) is not None}


def server_settings(config: Any, model_config: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The rollout and model settings :class:`HFServer` reads, as plain dicts (verl's config classes would make the
    server's process import verl to unpickle them)."""
    return _fields(config, ROLLOUT_FIELDS), _fields(model_config, MODEL_FIELDS)


class HFServer:
    """One rollout replica: a Hugging Face causal LM answering verl's ``generate`` calls in batches."""

    def __init__(self, config: Any, model_config: Any, replica_rank: int = 0) -> None:
        from transformers import AutoModelForCausalLM

        self.config = config
        self.replica_rank = replica_rank
        self.global_steps: Optional[int] = None
        hf_kwargs = dict(_get(_get(config, "engine_kwargs", {}) or {}, "hf", {}) or {})
        self.batch_wait_s = float(hf_kwargs.get("batch_wait_s", 0.02))
        if hf_kwargs.get("num_threads"):
            torch.set_num_threads(int(hf_kwargs["num_threads"]))
        dtype_name = str(_get(config, "dtype", "float32"))
        if dtype_name not in _DTYPES:
            raise ValueError(f"actor_rollout_ref.rollout.dtype={dtype_name!r} is not one of {sorted(_DTYPES)}")
        path = _get(model_config, "local_path") or _get(model_config, "path")
        override = dict(_get(model_config, "override_config", {}) or {})
        attn = override.get("attn_implementation", "sdpa")
        if not os.path.exists(path):  # a remote path (hdfs://...): verl's copy to a local directory
            from verl.utils.fs import copy_to_local

            path = copy_to_local(path)
        self.model = AutoModelForCausalLM.from_pretrained(
            path,
            dtype=_DTYPES[dtype_name],
            attn_implementation=attn,
            trust_remote_code=bool(_get(model_config, "trust_remote_code", False)),
        )
        self.model.eval()
        gen_cfg = self.model.generation_config
        eos = gen_cfg.eos_token_id if gen_cfg.eos_token_id is not None else self.model.config.eos_token_id
        self.eos_ids: list[int] = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        pad = gen_cfg.pad_token_id if gen_cfg.pad_token_id is not None else self.model.config.pad_token_id
        self.pad_id: int = pad if pad is not None else (self.eos_ids[0] if self.eos_ids else 0)
        self.prompt_length = int(_get(config, "prompt_length", 512))
        self.response_length = int(_get(config, "response_length", 512))
        self.max_model_len = int(_get(config, "max_model_len", None) or self.prompt_length + self.response_length)
        self.max_batch = int(_get(config, "max_num_seqs", 256) or 256)
        self.seed = int(_get(config, "seed", 0)) + replica_rank
        torch.manual_seed(self.seed)
        self._occurrences: dict[tuple[int, ...], int] = {}  # prompt -> requests seen in the current step
        self._occurrence_step: Optional[int] = None
        self._pending: list[_Request] = []
        self._flush_task: Optional[asyncio.Task] = None
        self._model_lock = asyncio.Lock()
        self._stats = {"requests": 0, "batches": 0, "generate_s": 0.0}

    # ------------------------------------------------------------------ generation

    def _sampling_key(self, prompt_len: int, params: dict[str, Any]) -> SamplingKey:
        max_possible = self.max_model_len - prompt_len
        if max_possible < 1:
            raise ValueError(
                f"prompt of {prompt_len} tokens leaves no room to generate within max_model_len={self.max_model_len}"
            )
        if "max_tokens" in params:
            max_tokens = params["max_tokens"]
        elif "max_new_tokens" in params:
            max_tokens = params["max_new_tokens"]
        else:
            max_tokens = min(self.response_length, self.prompt_length + self.response_length - prompt_len)
        top_k = params.get("top_k", -1)
        return SamplingKey(
            temperature=float(params.get("temperature", 1.0)),
            top_p=float(params.get("top_p", 1.0)),
            top_k=int(top_k if top_k is not None else -1),
            repetition_penalty=float(params.get("repetition_penalty", 1.0) or 1.0),
            max_tokens=max(1, min(int(max_tokens), max_possible)),
            logprobs=bool(params.get("logprobs", False)),
            ignore_eos=bool(params.get("ignore_eos", _get(self.config, "ignore_eos", False))),
        )

    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        request_id: str,
        image_data: Optional[list[Any]] = None,
        video_data: Optional[list[Any]] = None,
        audio_data: Optional[list[Any]] = None,
        mm_processor_kwargs: Optional[dict[str, Any]] = None,
        priority: int = 0,
        **kwargs: Any,
    ) -> ServerOutput:
        """Token-in/token-out generation of one request (batched with the requests that arrive with it)."""
        if image_data or video_data or audio_data:
            raise NotImplementedError("the hf rollout is text-only: image/video/audio inputs are not supported")
        prompt = [int(t) for t in prompt_ids]
        key = self._sampling_key(len(prompt), dict(sampling_params))
        future = asyncio.get_running_loop().create_future()
        self._pending.append(_Request(prompt, key, self._noise_key(prompt), future))
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.create_task(self._flush_after_wait())
        token_ids, log_probs = await future
        return ServerOutput(
            token_ids=token_ids,
            log_probs=log_probs,
            stop_reason="completed",
            extra_fields={"global_steps": self.global_steps},
        )

    def _noise_key(self, prompt: list[int]) -> tuple[int, int]:
        """The request's :func:`~rlvr_recipes.cpu_backend.sampling.request_key`: seed, step, prompt and how many
        requests for this prompt came before it in this step (the count restarts when the step changes)."""
        step = -1 if self.global_steps is None else int(self.global_steps)
        if step != self._occurrence_step:
            self._occurrences, self._occurrence_step = {}, step
        occurrence = self._occurrences.get(tuple(prompt), 0)
        self._occurrences[tuple(prompt)] = occurrence + 1
        return request_key(self.seed, step, prompt, occurrence)

    async def _flush_after_wait(self) -> None:
        """Collect requests until none arrives for ``batch_wait_s``, then run them batch by batch."""
        seen = -1
        while seen != len(self._pending):
            seen = len(self._pending)
            await asyncio.sleep(self.batch_wait_s)
        requests, self._pending = self._pending, []
        groups: dict[SamplingKey, list[_Request]] = {}
        for r in requests:
            groups.setdefault(r.key, []).append(r)
        async with self._model_lock:
            for key, group in groups.items():
                for start in range(0, len(group), self.max_batch):
                    chunk = group[start : start + self.max_batch]
                    try:
                        results = await asyncio.to_thread(
                            self._generate_batch, [r.prompt_ids for r in chunk], key, [r.noise_key for r in chunk]
                        )
                    except Exception as exc:  # every waiting request sees the error
                        for r in chunk:
                            if not r.future.done():
                                r.future.set_exception(exc)
                        continue
                    for r, res in zip(chunk, results):
                        if not r.future.done():
                            r.future.set_result(res)
        if self._pending:  # arrived while generating
            self._flush_task = asyncio.create_task(self._flush_after_wait())

    @torch.no_grad()
    def _generate_batch(
        self, prompts: list[list[int]], key: SamplingKey, noise_keys: list[tuple[int, int]]
    ) -> list[tuple[list[int], Optional[list[float]]]]:
        """Left-pad ``prompts``, run one ``generate`` and cut each response after its first end-of-sequence token.

        A sampled call (temperature above 0) runs ``generate`` in greedy mode with the warpers (temperature, top-k,
        top-p, in vLLM's and ``generate``'s order) and :class:`~rlvr_recipes.cpu_backend.sampling.KeyedSampler` as
        its last logits processors, so row ``i`` draws from the stream of ``noise_keys[i]`` (:meth:`_noise_key`)."""
        t0 = time.perf_counter()
        lengths = torch.tensor([len(p) for p in prompts])
        width = int(lengths.max())
        # left padding: pad the reversed prompts on the right, then flip back
        reversed_prompts = [torch.tensor(p[::-1], dtype=torch.long) for p in prompts]
        ids = torch.nn.utils.rnn.pad_sequence(reversed_prompts, batch_first=True, padding_value=self.pad_id).flip(1)
        mask = (torch.arange(width) >= width - lengths[:, None]).long()
        do_sample = key.temperature > 0
        gen_kwargs: dict[str, Any] = dict(
            max_new_tokens=key.max_tokens,
            do_sample=False,  # a sampled call draws in KeyedSampler; generate's argmax then takes its token
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=self.pad_id,
            eos_token_id=None if key.ignore_eos else (self.eos_ids or None),
            return_dict_in_generate=True,
            repetition_penalty=key.repetition_penalty,
        )
        if key.ignore_eos:
            gen_kwargs["min_new_tokens"] = key.max_tokens
        sampler = None
        if do_sample:
            processors, sampler = keyed_sampling(noise_keys, width, key.temperature, key.top_k, key.top_p)
            gen_kwargs["logits_processor"] = processors
        else:
            gen_kwargs["output_scores"] = key.logprobs
        out = self.model.generate(input_ids=ids, attention_mask=mask, **gen_kwargs)
        new = out.sequences[:, width:]
        logp = None
        if key.logprobs and sampler is not None and sampler.log_probs:
            logp = torch.stack(sampler.log_probs, dim=1)  # (batch, steps): processed log-probs of the drawn tokens
        elif key.logprobs and out.scores:
            scores = torch.stack(out.scores, dim=1).float()  # (batch, steps, vocab), greedy: the raw scores
            logp = torch.log_softmax(scores, dim=-1).gather(-1, new[:, : scores.shape[1]].unsqueeze(-1)).squeeze(-1)
        # each response ends after its first end-of-sequence token (generate pads the rest)
        ends = torch.full((new.shape[0],), new.shape[1], dtype=torch.long)
        if self.eos_ids and not key.ignore_eos:
            is_eos = torch.isin(new, torch.tensor(self.eos_ids, dtype=new.dtype))
            ends = torch.where(is_eos.any(1), is_eos.int().argmax(1) + 1, ends)
        results = [
            (new[i, :end].tolist(), logp[i, :end].tolist() if logp is not None else None)
            for i, end in enumerate(ends.tolist())
        ]
        self._stats["requests"] += len(prompts)
        self._stats["batches"] += 1
        self._stats["generate_s"] += time.perf_counter() - t0
        return results

    # ------------------------------------------------------------------ weights

    async def update_weights(self, state: dict[str, torch.Tensor], global_steps: Optional[int] = None) -> None:
        """Load the trainer's full weights (HF names) into the server's model, between generation batches."""
        async with self._model_lock:
            result = self.model.load_state_dict(state, strict=False)
        tied = {"lm_head.weight"} if getattr(self.model.config, "tie_word_embeddings", False) else set()
        missing = [k for k in result.missing_keys if k not in tied]
        if result.unexpected_keys or missing:
            raise RuntimeError(
                f"hf rollout weight sync: unexpected keys {result.unexpected_keys[:5]}, missing keys {missing[:5]}"
            )
        if global_steps is not None:
            self.global_steps = global_steps

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    def stats(self) -> dict[str, float]:
        """Requests served, ``generate`` calls and seconds spent in them since start."""
        return dict(self._stats)

    def ready(self) -> bool:
        return True

    # ------------------------------------------------------------------ lifecycle (no-ops on the CPU)

    async def wake_up(self, tags: Optional[list[str]] = None) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def wait_for_requests_to_drain(self) -> None:
        while self._pending or (self._flush_task is not None and not self._flush_task.done()):
            await asyncio.sleep(0.01)

    async def abort_all_requests(self, reset_prefix_cache: bool = True, reject_request: bool = False) -> dict:
        await self.wait_for_requests_to_drain()  # requests are short: let them finish instead of aborting
        return {"aborted_count": 0, "request_ids": []}

    async def abort_request(self, request_id: str, reset_prefix_cache: bool = True) -> dict:
        return {"aborted": False, "request_id": request_id}

    async def resume_generation(self) -> None:
        return None

    async def start_profile(self, **kwargs: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None
