"""One call on a machine with a GPU: this package's estimators and losses on CUDA against the CPU, bf16 against fp32,
speed against verl's own GRPO on the same GPU, and a tiny Llama under PyTorch FSDP2 over NCCL trained one step with
the ``cw_grpo`` and ``aapo`` losses in bf16 mixed precision. Writes a JSON and prints a readable summary.

    python benchmarks/gpu_check.py --json benchmarks/gpu_check_h100.json     # on the GPU machine
    python benchmarks/gpu_check.py --dry-run                                 # anywhere: what it would check, CPU side run

What it checks, per estimator of this package (``ESTIMATORS``, verl's ``grpo`` beside them) and per loss
(``cw_grpo``, ``aapo``; verl's ``vanilla`` beside them):

- ``cuda_vs_cpu``: the largest absolute difference between the CUDA and the CPU result on the same fp32 inputs
  (advantages; for losses the loss and the gradient w.r.t. the log-probs). Tolerance 1e-5 (fp32 reductions in another
  order).
- ``bf16_vs_fp32``: inputs cast to bf16 on CUDA against fp32 on CUDA, largest absolute difference, against the
  tolerance stated in :data:`BF16_TOL`.
- ``outputs_on``: every output tensor is on the inputs' device (no CPU tensor built inside meets a CUDA one).
- ``ms`` and ``vs_verl_grpo``: median CUDA time at 1024 prompts x 16 responses x 4096 tokens (after warm-up,
  synchronised), and the ratio to verl's ``grpo_vectorized`` on the same inputs.

The machine this was written for has torch and transformers but no Ray, vLLM or verl: verl's wheel and the few pure
dependencies it imports at start are carried, and ``benchmarks/gpu_shim/ray`` stands in for Ray (``import verl``
imports Ray at the top; nothing checked here calls it). verl's trainer, its FSDP workers and vLLM need Ray and are not
run; the FSDP2 step uses torch's ``fully_shard`` directly, the same sharding verl's FSDP2 engine applies.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_core, beside this file

#: bf16 against fp32, largest absolute difference allowed per output (advantages are O(1); bf16 has 8 bits of
#: mantissa, so a group statistic over bf16 rewards of 0/1 is exact but a normalised value carries ~4e-3 relative)
BF16_TOL = {"advantage": 0.05, "loss": 0.05, "grad": 0.05}
CUDA_TOL = 1e-5
SIZE_CHECK = (64, 8, 256)  # prompts x responses x tokens for the equality checks
SIZE_SPEED = (1024, 16, 4096)


def make_batch(prompts: int, responses: int, tokens: int, device: str, seed: int = 0) -> dict[str, Any]:
    """:func:`bench_core.make_batch` on ``device``, with 0/1 reference rewards for AAPO."""
    from bench_core import make_batch as core_batch

    tlr, mask, uid = core_batch(prompts, responses, tokens, seed)
    ref = torch.randint(0, 2, (tlr.shape[0],), generator=torch.Generator().manual_seed(seed + 1)).float()
    return {"tlr": tlr.to(device), "mask": mask.to(device), "ref": ref.to(device), "uid": uid}


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median_ms(fn: Callable[[], Any], repeat: int = 7, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    _sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_estimator(name: str, batch: dict[str, Any], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    from omegaconf import OmegaConf
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    from rlvr_recipes.advantage import state

    state.reset()
    fn = get_adv_estimator_fn(name)
    extra = {"ref_rewards": batch["ref"].to(dtype)} if name == "aapo" else {}
    cfg = OmegaConf.create({"norm_adv_by_std_in_grpo": True})
    adv, _ = fn(token_level_rewards=batch["tlr"].to(dtype), response_mask=batch["mask"].to(dtype), index=batch["uid"],
                config=cfg, **extra)
    return adv


def loss_inputs(prompts: int, responses: int, tokens: int, device: str, seed: int = 1) -> dict[str, Any]:
    g = torch.Generator().manual_seed(seed)
    bs = prompts * responses
    old = -torch.rand(bs, tokens, generator=g) * 3
    adv = torch.randn(bs, 1, generator=g).expand(bs, tokens).contiguous()
    lengths = torch.randint(1, tokens + 1, (bs,), generator=g)
    mask = (torch.arange(tokens).unsqueeze(0) < lengths.unsqueeze(1)).float()
    noise = torch.randn(bs, tokens, generator=g) * 0.05
    return {"old": old.to(device), "adv": adv.to(device), "mask": mask.to(device), "noise": noise.to(device)}


def loss_config() -> Any:
    extra = {"clip_ratio_c": 3.0}
    return SimpleNamespace(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0,
                           global_batch_info={}, get=lambda k, d=None: extra.get(k, d))


def run_loss(name: str, inp: dict[str, Any], dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    fn = get_policy_loss_fn(name)
    old = inp["old"].to(dtype)
    lp = (inp["old"] + inp["noise"]).to(dtype).clone().requires_grad_(True)
    loss, _ = fn(old, lp, inp["adv"].to(dtype), inp["mask"].to(dtype), "token-mean", loss_config())
    loss.backward()
    return loss.detach().float(), lp.grad.float()


def _maxdiff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float().cpu() - b.float().cpu()).abs().max())


def check_estimators(device: str, speed: bool) -> list[dict[str, Any]]:
    from rlvr_recipes.advantage.estimators import ESTIMATORS

    rows = []
    cpu_batch = make_batch(*SIZE_CHECK, device="cpu")
    dev_batch = make_batch(*SIZE_CHECK, device=device)
    big = make_batch(*SIZE_SPEED, device=device) if speed else None
    for name in ("grpo_vectorized", *ESTIMATORS):
        ref = run_estimator(name, cpu_batch)
        out = run_estimator(name, dev_batch)
        row = {"name": name, "outputs_on": str(out.device), "cuda_vs_cpu": _maxdiff(out, ref)}
        row["ok"] = row["cuda_vs_cpu"] <= CUDA_TOL and out.device.type == torch.device(device).type
        if device != "cpu":
            bf = run_estimator(name, dev_batch, torch.bfloat16)
            row["bf16_vs_fp32"] = _maxdiff(bf, out)
            row["bf16_finite"] = bool(torch.isfinite(bf.float()).all())
            row["bf16_output_dtype"] = str(bf.dtype).replace("torch.", "")
            row["ok"] = row["ok"] and row["bf16_vs_fp32"] <= BF16_TOL["advantage"] and row["bf16_finite"]
        rows.append(row)
        print(f"[estimator] {name:<20} cuda-cpu {row['cuda_vs_cpu']:.2e}"
              + (f"  bf16-fp32 {row['bf16_vs_fp32']:.2e}" if "bf16_vs_fp32" in row else "")
              + ("" if row["ok"] else "  FAILED"), flush=True)
    if speed:  # interleaved rounds: each round times every estimator once; medians over rounds
        times: dict[str, list[float]] = {r["name"]: [] for r in rows}
        for round_ in range(9):
            for name in times:
                ms = median_ms(lambda name=name: run_estimator(name, big), repeat=1, warmup=1 if round_ == 0 else 0)
                times[name].append(ms)
        base = statistics.median(times["grpo_vectorized"])
        for row in rows:
            row["ms"] = statistics.median(times[row["name"]])
            row["vs_verl_grpo"] = row["ms"] / base
        print("[speed] median ms at " + "x".join(map(str, SIZE_SPEED)) + " (ratio to verl grpo_vectorized): "
              + ", ".join(f"{r['name']} {r['ms']:.2f} ({r['vs_verl_grpo']:.2f}x)" for r in rows), flush=True)
    return rows


def check_losses(device: str) -> list[dict[str, Any]]:
    rows = []
    cpu_in = loss_inputs(*SIZE_CHECK, device="cpu")
    dev_in = loss_inputs(*SIZE_CHECK, device=device)
    for name in ("vanilla", "cw_grpo", "aapo"):
        loss_c, grad_c = run_loss(name, cpu_in)
        loss_d, grad_d = run_loss(name, dev_in)
        row = {"name": name, "outputs_on": str(grad_d.device), "loss": float(loss_d),
               "cuda_vs_cpu_loss": _maxdiff(loss_d, loss_c), "cuda_vs_cpu_grad": _maxdiff(grad_d, grad_c)}
        row["ok"] = max(row["cuda_vs_cpu_loss"], row["cuda_vs_cpu_grad"]) <= CUDA_TOL
        if device != "cpu":
            loss_b, grad_b = run_loss(name, dev_in, torch.bfloat16)
            row["bf16_vs_fp32_loss"] = _maxdiff(loss_b, loss_d)
            row["bf16_vs_fp32_grad"] = _maxdiff(grad_b, grad_d)
            row["ok"] = (row["ok"] and row["bf16_vs_fp32_loss"] <= BF16_TOL["loss"]
                         and row["bf16_vs_fp32_grad"] <= BF16_TOL["grad"])
        rows.append(row)
        print(f"[loss] {name:<8} loss {row['loss']:+.5f}  cuda-cpu {row['cuda_vs_cpu_loss']:.2e}/"
              f"{row['cuda_vs_cpu_grad']:.2e} (loss/grad)"
              + (f"  bf16-fp32 {row['bf16_vs_fp32_loss']:.2e}/{row['bf16_vs_fp32_grad']:.2e}" if device != "cpu" else "")
              + ("" if row["ok"] else "  FAILED"), flush=True)
    return rows


def check_cw_weights(device: str) -> dict[str, Any]:
    """CW-GRPO's per-group weights (the trainer extension's path): CUDA against CPU, bf16 log-probs against fp32."""
    from rlvr_recipes.advantage.losses import covariance_weights

    inp = loss_inputs(*SIZE_CHECK, device="cpu")
    gidx = torch.arange(inp["old"].shape[0]) // SIZE_CHECK[1]
    w_cpu, _ = covariance_weights(inp["old"], inp["adv"], inp["mask"], gidx, SIZE_CHECK[0])
    to = {k: v.to(device) for k, v in inp.items()}
    w_dev, figs = covariance_weights(to["old"], to["adv"], to["mask"], gidx.to(device), SIZE_CHECK[0])
    row = {"cuda_vs_cpu": _maxdiff(w_dev, w_cpu), "figures": figs}
    row["ok"] = row["cuda_vs_cpu"] <= CUDA_TOL
    if device != "cpu":
        w_bf, _ = covariance_weights(to["old"].bfloat16(), to["adv"].bfloat16(), to["mask"], gidx.to(device),
                                     SIZE_CHECK[0])
        row["bf16_vs_fp32"] = _maxdiff(w_bf, w_dev)
        row["ok"] = row["ok"] and row["bf16_vs_fp32"] <= 0.1
    print(f"[cw weights per group] cuda-cpu {row['cuda_vs_cpu']:.2e}"
          + (f"  bf16-fp32 {row['bf16_vs_fp32']:.2e}" if "bf16_vs_fp32" in row else "")
          + ("" if row["ok"] else "  FAILED"), flush=True)
    return row


def _full(p: torch.Tensor) -> torch.Tensor:
    """A parameter's whole value (FSDP2 shards them as DTensors)."""
    p = p.detach()
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def check_fsdp2_step(device: str) -> dict[str, Any]:
    """A tiny Llama (built from a config) sharded with FSDP2 (``fully_shard``, bf16 params in compute, fp32 reduce)
    over NCCL, one rank: log-probs of sampled responses, the ``cw_grpo`` and ``aapo`` losses, backward, an AdamW step;
    the loss and gradient norm finite and the weights changed."""
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    if device == "cpu":
        return {"skipped": "no GPU"}
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        cfg = LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128)
        model = LlamaForCausalLM(cfg).to(device)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        out = {}
        for loss_name in ("cw_grpo", "aapo"):
            ids = torch.randint(0, 64, (16, 24), device=device)
            mask = torch.ones(16, 16, device=device)
            logits = model(input_ids=ids).logits[:, 7:-1].float()
            lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 8:, None]).squeeze(-1)
            adv = torch.randn(16, 1, device=device).expand(16, 16)
            before = [_full(p).clone() for p in model.parameters()]
            loss, metrics = get_policy_loss_fn(loss_name)(lp.detach(), lp, adv, mask, "token-mean", loss_config())
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            after = [_full(p) for p in model.parameters()]
            changed = any(bool((a - b).abs().max() > 0) for a, b in zip(after, before))
            norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
            out[loss_name] = {"loss": float(loss), "grad_norm": norm, "weights_changed": changed,
                              "ok": bool(np.isfinite(float(loss)) and np.isfinite(norm) and changed)}
            print(f"[fsdp2 nccl bf16] {loss_name}: loss {float(loss):+.5f} grad norm {norm:.4f} "
                  f"weights changed {changed}" + ("" if out[loss_name]["ok"] else "  FAILED"), flush=True)
        out["ok"] = all(v["ok"] for v in out.values() if isinstance(v, dict))
        return out
    finally:
        dist.destroy_process_group()


def environment() -> dict[str, Any]:
    import importlib.metadata as md

    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"}
    for pkg in ("verl", "transformers", "tensordict", "omegaconf"):
        try:
            env[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            env[pkg] = None
    import ray

    env["ray"] = "stand-in (benchmarks/gpu_shim)" if getattr(ray, "IS_STAND_IN", False) else getattr(ray, "__version__", "?")
    return env


PLAN = """gpu_check: what it checks
  1. every estimator of this package and verl's grpo_vectorized: CUDA vs CPU (<= {cuda}), bf16 vs fp32 (<= {bf16}),
     outputs on the input device, CUDA time at {speed} against verl's grpo_vectorized
  2. losses vanilla (verl), cw_grpo, aapo: loss and gradient, CUDA vs CPU and bf16 vs fp32
  3. CW-GRPO per-group covariance weights: CUDA vs CPU, bf16 vs fp32
  4. a tiny Llama under FSDP2 (fully_shard, bf16 mixed precision) over NCCL: one step with cw_grpo and with aapo"""


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would be checked; run the CPU side only")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--no-speed", action="store_true")
    args = parser.parse_args(argv)
    print(PLAN.format(cuda=CUDA_TOL, bf16=BF16_TOL["advantage"], speed="x".join(map(str, SIZE_SPEED))))
    # the estimators and losses register on import; verl's plugin loading would also import the trainer extension,
    # which needs TransferQueue (absent where Ray is)
    os.environ.setdefault("VERL_USE_EXTERNAL_PLUGINS", "none")
    import verl  # noqa: F401
    import rlvr_recipes.advantage.estimators  # noqa: F401
    import rlvr_recipes.advantage.losses  # noqa: F401

    device = "cuda" if torch.cuda.is_available() and not args.dry_run else "cpu"
    if device == "cpu":
        print("no GPU (or --dry-run): the checks run CPU against CPU, which shows the script works, not the GPU path")
    result = {"environment": environment(), "device": device,
              "estimators": check_estimators(device, speed=device != "cpu" and not args.no_speed),
              "losses": check_losses(device), "cw_weights": check_cw_weights(device),
              "fsdp2_step": check_fsdp2_step(device)}
    failed = [r["name"] for r in result["estimators"] + result["losses"] if not r["ok"]]
    failed += [k for k in ("cw_weights", "fsdp2_step") if result[k].get("ok") is False]
    result["failed"] = failed
    print(f"gpu_check on {result['environment']['device']}: "
          + ("all checks passed" if not failed else f"FAILED: {', '.join(failed)}"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
