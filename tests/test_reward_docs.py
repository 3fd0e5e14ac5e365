"""The training command of docs/rewards-data-eval.md composes on verl 0.9.1's ppo_trainer, passes verl's
validate_config, and wires this package's reward through verl's own loader."""

import re
import shlex
from pathlib import Path

from hydra import compose, initialize_config_dir

import verl
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config

DOC = Path(__file__).resolve().parents[1] / "docs" / "rewards-data-eval.md"


def _training_overrides() -> list[str]:
    text = DOC.read_text()
    start = text.index("python -m verl.trainer.main_ppo")
    command = []
    for line in text[start:].splitlines():
        command.append(line.rstrip("\\").strip())
        if not line.rstrip().endswith("\\"):
            break
    args = shlex.split(" ".join(command))
    return args[args.index("verl.trainer.main_ppo") + 1 :]


def test_documented_training_command_is_valid_for_verl():
    overrides = _training_overrides()
    assert any(o.startswith("reward.custom_reward_function.path=") for o in overrides)
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert cfg.data.val_files[-1] == "data/olympiadbench.parquet" and list(cfg.trainer.logger) == ["console", "file"]
    fn = get_custom_reward_fn(cfg)
    out = fn(data_source="aime24", solution_str="<think>\n...\n</think>\n<answer>\\boxed{204}</answer>",
             ground_truth="204", extra_info={})
    assert out["score"] == 2.0  # the cw_grpo recipe: accuracy + format


def test_documented_data_commands_name_real_datasets_and_templates():
    from rlvr_recipes.launch.data import DATASETS, TEMPLATES

    text = DOC.read_text()
    for name in re.findall(r"--dataset (\w+)", text):
        assert name in DATASETS, name
    for name in re.findall(r"--template (\w+)", text):
        assert name in TEMPLATES, name
    for loop in re.findall(r"for b in ([\w ]+); do", text):
        assert set(loop.split()) <= set(DATASETS)
