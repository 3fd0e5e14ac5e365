"""Registration through verl's own plugin hook, checked in fresh interpreters."""

import os
import subprocess
import sys

NAMES = "agrae agrae_pos_dominant agrae_neg_dominant agrae_hard_focused agrae_easy_focused avspo aapo grpo_n grpo_pos_only w_reinforce".split()
CHECK = (
    "import verl\n"
    "from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn\n"
    f"[get_adv_estimator_fn(n) for n in {NAMES!r}]\n"
    "[get_policy_loss_fn(n) for n in ('cw_grpo', 'aapo')]\n"
    "print('REGISTERED')\n"
)


def _python(code, **env):
    full = {**os.environ, **env}
    full.pop("VERL_PLATFORM", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300)


def test_import_verl_alone_registers_everything():
    out = _python(CHECK)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "REGISTERED" in out.stdout


def test_external_modules_variable_registers_without_entry_points():
    out = _python(CHECK, VERL_USE_EXTERNAL_PLUGINS="none", VERL_USE_EXTERNAL_MODULES="rlvr_recipes.launch.plugin")
    assert out.returncode == 0, out.stderr[-3000:]


def test_without_the_plugin_the_names_are_unknown():
    """The check above can fail: with plugins disabled verl does not know the names."""
    out = _python(CHECK, VERL_USE_EXTERNAL_PLUGINS="none")
    assert out.returncode != 0 and "Unknown advantage estimator" in out.stderr


def test_broken_install_is_loud():
    code = "import sys, warnings\nwarnings.simplefilter('always')\nsys.modules['rlvr_recipes.advantage.losses'] = None\nimport verl\n"
    out = _python(code)
    assert "rlvr-recipes verl plugin failed to load" in out.stderr
    assert "rlvr_recipes.advantage.losses" in out.stderr
