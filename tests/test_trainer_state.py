"""Crash-safe estimator state: atomic writes, written before verl records the step, refused when missing or broken.

The end-to-end version (the real trainer SIGKILLed during rollout, update and checkpoint save, then resumed) is
tests/test_e2e_fault.py; these tests pin each piece on its own, a real SIGKILL in the middle of a write included.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from omegaconf import OmegaConf

import verl  # noqa: F401  (plugin registration first: rlvr_recipes.trainer.extension is imported by it)
from rlvr_recipes.advantage import state
from rlvr_recipes.advantage.diagnostics import ACRTracker
from rlvr_recipes.advantage.state import AVSPOState
from rlvr_recipes.trainer.extension import (
    FAULT_ENV,
    FAULT_MARKER_ENV,
    STATE_FILE,
    EstimatorStateOptions,
    StateFileError,
    load_state,
    read_state,
    restore_state,
    resume_folder,
    save_state,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _state_at(step: int, acrs: list[float]) -> ACRTracker:
    """Registry and tracker as after ``step`` AVSPO calls with these batch ACRs."""
    state.get_state("avspo", AVSPOState)
    state.load_state_dict({"avspo": {"type": "AVSPOState", "tau_adapt": 0.25 + step / 100, "prev_mean_reward": 0.5,
                                     "step": step}})
    tracker = ACRTracker()
    for a in acrs:
        tracker.update(a)
    return tracker


def test_round_trip_and_file_contents(tmp_path):
    tracker = _state_at(2, [0.5, 0.25])
    folder = tmp_path / "global_step_2"
    path = save_state(str(folder), tracker, 2)
    saved = json.loads(open(path).read())
    assert saved["global_step"] == 2 and saved["estimators"]["avspo"]["step"] == 2
    assert saved["acr_tracker"]["window"] == [0.5, 0.25] and saved["acr_tracker"]["early_sum"] == 0.75
    assert [p.name for p in folder.iterdir()] == [STATE_FILE]  # no temporary file left behind
    state.reset()
    resumed = ACRTracker()
    load_state(str(folder), resumed, 2)
    assert state.state_dict()["avspo"]["tau_adapt"] == pytest.approx(0.27)
    assert resumed.update(0.0) == {"acr/volatility": pytest.approx(0.2041241452), "acr/acr_100": pytest.approx(0.25)}


def test_missing_state_is_refused_naming_the_file(tmp_path):
    folder = tmp_path / "global_step_3"
    folder.mkdir()
    with pytest.raises(StateFileError, match=rf"{folder}/{STATE_FILE} is missing.*fresh_on_resume=true"):
        read_state(str(folder), 3)


@pytest.mark.parametrize(
    "content, needle",
    [
        ('{"global_step": 3, "estimators": {"avspo": {"type": "AVS', "is unreadable"),  # cut short mid-write
        ("", "is unreadable"),
        (b"\xff\xfe", "is unreadable"),
        ('{"global_step": 3}', "lacks the 'estimators' or 'acr_tracker' section"),
        ('[1, 2]', "lacks the 'estimators' or 'acr_tracker' section"),
        ('{"global_step": 2, "estimators": {}, "acr_tracker": {}}', "written at global step 2, not 3"),
        ('{"global_step": 3, "estimators": {}, "acr_tracker": {"window": []}}', "does not load"),
        ('{"global_step": 3, "estimators": {"x": {"type": "Nope"}}, "acr_tracker": {"window": [], "maxlen": 25, '
         '"early_steps": 100, "early_sum": 0.0, "early_n": 0}}', "does not load"),
    ],
    ids=["truncated", "empty", "not-utf8", "no-sections", "not-a-dict", "other-step", "bad-tracker", "bad-type"],
)
def test_unreadable_state_is_refused_and_nothing_changes(tmp_path, content, needle):
    folder = tmp_path / "global_step_3"
    folder.mkdir()
    (folder / STATE_FILE).write_bytes(content if isinstance(content, bytes) else content.encode())
    tracker = _state_at(1, [0.5])
    before, tracker_before = state.state_dict(), tracker.state_dict()
    with pytest.raises(StateFileError, match=needle) as err:
        load_state(str(folder), tracker, 3)
    assert str(folder / STATE_FILE) in str(err.value)
    assert state.state_dict() == before and tracker.state_dict() == tracker_before


def test_fresh_on_resume_starts_fresh_with_a_warning(tmp_path):
    folder = tmp_path / "global_step_4"
    folder.mkdir()
    (folder / STATE_FILE).write_text("{")
    tracker = _state_at(1, [0.5])
    with pytest.raises(StateFileError):
        restore_state(str(folder), tracker)
    line = restore_state(str(folder), tracker, fresh_on_resume=True)
    assert "WARNING" in line and "start fresh at global step 4" in line and str(folder / STATE_FILE) in line
    assert state.state_dict() == {} and tracker.state_dict() == ACRTracker().state_dict()
    good = save_state(str(tmp_path / "global_step_5"), _state_at(5, [0.1]), 5)
    line = restore_state(os.path.dirname(good), ACRTracker())
    assert line.startswith(f"[rlvr] restored estimator state from {good}: ")
    assert json.loads(line[line.index("{"):])["estimators"]["avspo"]["step"] == 5


def test_option_is_checked():
    assert EstimatorStateOptions().fresh_on_resume is False
    with pytest.raises(ValueError, match="algorithm.estimator_state.fresh_on_resume"):
        EstimatorStateOptions(fresh_on_resume="yes").validate("estimator_state")


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    folder = tmp_path / "global_step_2"
    save_state(str(folder), _state_at(2, [0.5]), 2)
    old = (folder / STATE_FILE).read_text()
    state.get_state("avspo", AVSPOState).tau_adapt = float("nan")

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        save_state(str(folder), ACRTracker(), 2)
    assert (folder / STATE_FILE).read_text() == old and [p.name for p in folder.iterdir()] == [STATE_FILE]


def test_sigkill_in_the_middle_of_a_write_leaves_the_previous_state(tmp_path):
    """A writer SIGKILLed after its temporary file is written and synced, before the rename (the fault hook pauses
    it there): the previous state file is intact and still loads."""
    folder = tmp_path / "global_step_7"
    save_state(str(folder), _state_at(6, [0.5, 0.5]), 7)
    old = (folder / STATE_FILE).read_text()
    marker = tmp_path / "paused"
    code = (
        "import sys; from rlvr_recipes.advantage import state; from rlvr_recipes.advantage.state import AVSPOState;"
        "from rlvr_recipes.advantage.diagnostics import ACRTracker; from rlvr_recipes.trainer.extension import save_state;"
        "state.get_state('avspo', AVSPOState).step = 7; save_state(sys.argv[1], ACRTracker(), 7)"
    )
    env = dict(os.environ, **{FAULT_ENV: "state_write@7", FAULT_MARKER_ENV: str(marker)})
    proc = subprocess.Popen([sys.executable, "-c", code, str(folder)], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the writer never reached the fault point"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    temporaries = [p.name for p in folder.iterdir() if p.name != STATE_FILE]
    assert len(temporaries) == 1 and temporaries[0].endswith(".tmp")  # the new state, complete but never renamed
    assert json.loads((folder / temporaries[0]).read_text())["estimators"]["avspo"]["step"] == 7
    assert (folder / STATE_FILE).read_text() == old
    assert read_state(str(folder), 7)["estimators"]["avspo"]["step"] == 6


def test_resume_folder_follows_verl_rules(tmp_path, monkeypatch):
    ckpt = tmp_path / "ckpt"
    (ckpt / "global_step_3").mkdir(parents=True)
    trainer = OmegaConf.create({"resume_mode": "auto", "default_local_dir": str(ckpt), "resume_from_path": None})
    assert resume_folder(trainer) is None  # no latest_checkpointed_iteration.txt: verl trains from scratch
    (ckpt / "latest_checkpointed_iteration.txt").write_text("3")
    assert resume_folder(trainer) == str(ckpt / "global_step_3")
    monkeypatch.chdir(tmp_path)
    trainer.default_local_dir = "ckpt"
    assert resume_folder(trainer) == str(ckpt / "global_step_3")
    trainer.resume_mode = "resume_path"
    trainer.resume_from_path = "ckpt/global_step_9"
    assert resume_folder(trainer) == str(ckpt / "global_step_9")
    trainer.resume_mode = "disable"
    assert resume_folder(trainer) is None
    trainer.resume_mode = "auto"
    (ckpt / "latest_checkpointed_iteration.txt").write_text("")  # verl's own record, cut short by a kill
    with pytest.raises(StateFileError, match="latest_checkpointed_iteration.txt is unreadable"):
        resume_folder(trainer)


def _trainer(tmp_path, step: int, fresh: bool = False):
    """The registered trainer class without verl's constructor: only what the checkpoint hooks read."""
    import verl  # noqa: F401  (plugin registration)
    from verl.trainer.ppo.v1 import get_trainer_cls

    t = get_trainer_cls("rlvr").__new__(get_trainer_cls("rlvr"))
    t.config = OmegaConf.create({
        "trainer": {"default_local_dir": str(tmp_path / "ckpt"), "resume_mode": "auto", "resume_from_path": None},
        "algorithm": {"estimator_state": {"fresh_on_resume": fresh}},
    })
    t.acr_tracker = ACRTracker()
    t.global_steps = step
    return t


def test_state_is_on_disk_before_verl_records_the_step(tmp_path, monkeypatch):
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    seen = {}

    def verl_save(self):  # verl's save ends by writing latest_checkpointed_iteration.txt
        path = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}", STATE_FILE)
        seen["state_before_verl"] = os.path.exists(path)
        with open(os.path.join(self.config.trainer.default_local_dir, "latest_checkpointed_iteration.txt"), "w") as f:
            f.write(str(self.global_steps))

    monkeypatch.setattr(PPOTrainerSync, "_save_checkpoint", verl_save)
    _state_at(2, [0.5, 0.0])
    t = _trainer(tmp_path, 2)
    t._save_checkpoint()
    assert seen == {"state_before_verl": True}
    assert read_state(str(tmp_path / "ckpt" / "global_step_2"), 2)["estimators"]["avspo"]["step"] == 2


def test_resume_refuses_before_verl_loads_anything(tmp_path, monkeypatch, capsys):
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

    calls = []

    def verl_load(self):
        calls.append(self.global_steps)
        self.global_steps = 2

    monkeypatch.setattr(PPOTrainerSync, "_load_checkpoint", verl_load)
    ckpt = tmp_path / "ckpt"
    (ckpt / "global_step_2").mkdir(parents=True)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("2")
    with pytest.raises(StateFileError, match="global_step_2/rlvr_state.json is missing"):
        _trainer(tmp_path, 0)._load_checkpoint()
    assert calls == []  # refused before verl loaded the actor
    t = _trainer(tmp_path, 0, fresh=True)
    t._load_checkpoint()
    assert calls == [0] and "start fresh at global step 2" in capsys.readouterr().out
    save_state(str(ckpt / "global_step_2"), _state_at(2, [0.5, 0.25]), 2)
    state.reset()
    t = _trainer(tmp_path, 0)
    t._load_checkpoint()
    assert state.state_dict()["avspo"]["step"] == 2 and t.acr_tracker.state_dict()["window"] == [0.5, 0.25]
