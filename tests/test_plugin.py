"""Registration through verl's own plugin hook, checked in fresh interpreters."""

import glob
import os
import subprocess
import sys

import pytest

NAMES = "agrae agrae_pos_dominant agrae_neg_dominant agrae_hard_focused agrae_easy_focused avspo aapo grpo_n grpo_pos_only w_reinforce".split()
CHECK = (
    "import verl\n"
    "from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn\n"
    f"[get_adv_estimator_fn(n) for n in {NAMES!r}]\n"
    "[get_policy_loss_fn(n) for n in ('cw_grpo', 'aapo')]\n"
    "from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY\n"
    "assert 'rlvr' in TRAINER_REGISTRY, sorted(TRAINER_REGISTRY)\n"
    "print('REGISTERED')\n"
)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _imports_verl_at_the_top(path: str) -> bool:
    with open(path) as f:
        return any(line.startswith(("import verl", "from verl")) for line in f)


#: the modules that may be the first a user's script imports while verl's import loads the plugin: those of the
#: folders that register with verl or use what it registered and import verl at the top, and the plugin's own imports
FIRST_IMPORTS = sorted({
    os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    for folder in ("advantage", "trainer", "toy")
    for path in glob.glob(os.path.join(ROOT, "rlvr_recipes", folder, "*.py"))
    if _imports_verl_at_the_top(path)
} | {"rlvr_recipes.trainer.extension", "rlvr_recipes.trainer.checks", "rlvr_recipes.launch.plugin"})


def _python(code, **env):
    full = {**os.environ, **env}
    full.pop("VERL_PLATFORM", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300)


def test_import_verl_alone_registers_everything():
    out = _python(CHECK)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "REGISTERED" in out.stdout


@pytest.mark.parametrize("module", FIRST_IMPORTS)
def test_registers_whichever_module_a_process_imports_first(module):
    """Importing verl loads the plugin, which imports the estimators, the losses and the trainer extension. A process
    whose first import is one of those modules hands the plugin that module half made; the plugin must still
    register everything (it once failed for ``trainer.extension`` and ``advantage.losses``)."""
    out = _python(f"import warnings\nwarnings.simplefilter('always')\nimport {module}\n" + CHECK)
    assert "failed to load" not in out.stderr, out.stderr[-3000:]
    assert out.returncode == 0 and "REGISTERED" in out.stdout, out.stderr[-3000:]


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
