# Thin wrapper: set-up is tools/bootstrap.py (lock files: tools/lock.py), everything
# else is `python -m minikernel ...` or pytest, run from the course's .venv.
PY := .venv/bin/python
ARGS ?=
# Each test layer prints its wall time and says when it took more than its share of
# the 8-minute budget of `make test` (seconds; docs/maintainers.md, "Measurement log").
BUDGET_setup := 90
BUDGET_solutions := 90
BUDGET_student := 50
BUDGET_notebooks := 100
BUDGET_browser := 40
BUDGET_smoke := 60
BUDGET_corpus := 50
# (480 s in all.)
# $(call timed,LAYER,COMMAND): run COMMAND, report its time against BUDGET_LAYER (also
# when it fails), exit with COMMAND's status.
timed = @start=$$(date +%s); $(2); rc=$$?; took=$$(( $$(date +%s) - start )); \
	if [ $$took -gt $(BUDGET_$(1)) ]; then \
	  echo "==> $(1): $$took s, over its share of $(BUDGET_$(1)) s"; \
	else echo "==> $(1): $$took s (share $(BUDGET_$(1)) s)"; fi; exit $$rc

.DEFAULT_GOAL := lab
# The test layers run in order even under `make -j`.
.NOTPARALLEL:
.PHONY: lab update setup dashboard test test-setup test-solutions test-student test-notebooks \
        test-browser test-smoke test-browser-and-smoke test-corpus stress grade bench figures notebooks fuzz lock clean

## lab: set up (first time only) and start JupyterLab on your copies in my-notebooks/ (and visdom beside it)
lab: setup
	$(PY) -m minikernel lab $(ARGS)

## dashboard: start the visdom server of the live dashboards on 127.0.0.1:8097
dashboard: setup
	$(PY) -m minikernel dashboard $(ARGS)

## update: bring in the course's updates (git pull), keeping your minikernel/ code; says what changed
update:
	@python3 tools/update.py

## setup: create .venv from the lock file for your Python (instant when up to date)
setup:
	python3 tools/bootstrap.py

## test: everything CI runs, in layers; stops at the first failing layer
SERIAL_LAYERS := test-setup test-solutions test-student test-corpus test-notebooks
TEST_LAYERS := $(SERIAL_LAYERS) test-browser test-smoke
test:
	@$(MAKE) --no-print-directory $(SERIAL_LAYERS)
	@$(MAKE) --no-print-directory test-browser-and-smoke

# The browser layer mostly waits (on JupyterLab, Chromium, the page) and the smoke layer
# runs one process at a time, so the two share the cores: the smoke layer's output is
# shown when both have finished, and either failing fails the run.
test-browser-and-smoke:
	@out=$$(mktemp); ( $(MAKE) --no-print-directory test-smoke > "$$out" 2>&1; echo $$? > "$$out.rc" ) & \
	$(MAKE) --no-print-directory test-browser; browser=$$?; wait; cat "$$out"; smoke=$$(cat "$$out.rc"); \
	rm -f "$$out" "$$out.rc"; [ $$browser -eq 0 ] && [ $$smoke -eq 0 ]

# The layers run two test processes side by side, one per core: one torch (OpenMP)
# thread each. More threads than cores spin-wait on each other at every operation
# (a notebook cell that takes 1 s alone took 12 s beside another notebook).
$(TEST_LAYERS): export OMP_NUM_THREADS ?= 1
# Python's bytecode caches are written (__pycache__, ignored by git) even where the
# environment turns them off: the layers start hundreds of processes (graded exercises,
# notebook kernels, ranks) that would each compile the course's modules again.
$(TEST_LAYERS): export PYTHONDONTWRITEBYTECODE =

test-setup:
	@echo "==> [0/6] set-up: system packages, .venv from the lock"
	$(call timed,setup,python3 tools/bootstrap.py --system)

test-solutions:
	@echo "==> [1/6] unit + differential tests, references on (MINIKERNEL_SOLUTIONS=all)"
	$(call timed,solutions,MINIKERNEL_SOLUTIONS=all $(PY) -m pytest tests -m "not browser" -n 2 --dist loadgroup \
	    --ignore=tests/test_notebooks_student.py)

test-student:
	@echo "==> [2/6] student mode (MINIKERNEL_SOLUTIONS empty): what can differ without references"
	$(call timed,student,MINIKERNEL_SOLUTIONS= $(PY) -m pytest tests -m "not browser and not own_mode" -n 2 --dist loadgroup)

test-corpus:
	@echo "==> [3/6] wrong-solution corpus: every case in tests/wrong/ must grade FAIL (references elsewhere)"
	$(call timed,corpus,MINIKERNEL_CORPUS=1 $(PY) -m pytest tests/wrong -p no:randomly)

# The notebooks run with only what `make lab` installs on PATH: no graphviz, Chromium,
# bubblewrap or C/C++ compiler (tools/system_packages.py --newcomer-path), as a newcomer runs them.
NEWCOMER := python3 tools/system_packages.py --newcomer-path --
test-notebooks:
	@echo "==> [4/6] notebooks as after make lab alone: stored outputs (nbval, references on, one notebook per worker), then every chapter in student mode"
	$(call timed,notebooks,MINIKERNEL_SOLUTIONS=all $(NEWCOMER) $(PY) -m pytest --nbval --nbval-current-env \
	    --nbval-sanitize-with chapters/sanitize.cfg chapters/*.ipynb -p no:randomly -n 2 --dist loadfile \
	    && $(NEWCOMER) $(PY) -m pytest tests/test_notebooks_student.py -n 2 --dist loadgroup)

test-browser:
	@echo "==> [5/6] browser tests: JupyterLab and visdom in headless Chromium"
	$(call timed,browser,MINIKERNEL_SOLUTIONS=all $(PY) -m pytest tests/browser -m browser)

test-smoke:
	@echo "==> [6/6] smoke: a second supported Python, fresh venv from its lock"
	$(call timed,smoke,python3 tools/smoke.py)

## stress: 20 rounds of processes (more than the cores) compiling chapter 02's kernels into one cache, checked against torch
stress: export OMP_NUM_THREADS ?= 1
stress:
	MINIKERNEL_STRESS_ROUNDS=$${MINIKERNEL_STRESS_ROUNDS:-20} $(PY) -m pytest tests/test_jit_concurrency.py \
	    -k stress_many -p no:randomly -s --timeout 0  # 20 rounds take longer than the suite's 300 s per test

## grade: grade your exercises, e.g. make grade ARGS="1.2 --json"
grade: setup
	$(PY) -m minikernel grade $(ARGS)

## figures: redraw chapter 03's stored pictures (chapters/figures/) with graphviz's dot
figures: setup
	$(PY) -m widgets.stored_figures_build $(ARGS)

## bench: time the reference kernels against PyTorch
bench: setup
	$(PY) -m minikernel bench $(ARGS)

## notebooks: re-execute chapters/*.py into chapters/*.ipynb
notebooks: setup
	$(PY) -m minikernel notebooks $(ARGS)

## site: build the course website into build/site/ (README, docs, the chapters' stored outputs); python -m minikernel site serves it
.PHONY: site
site: setup
	$(PY) -m minikernel site --build $(ARGS)

## fuzz: random programs against torch for a while, e.g. make fuzz ARGS="--minutes 30" (divergences become tests)
fuzz: setup
	MINIKERNEL_SOLUTIONS=all $(PY) -m tests.conformance.fuzz $(ARGS)

## mutants: grade mutants of the reference bodies with their exercises' tests, e.g. make mutants ARGS="9.*" (docs/mutation.md)
mutants: export OMP_NUM_THREADS ?= 1
mutants: setup
	$(PY) -m tests.mutation $(ARGS)

## lock: refresh lock-py3.X.txt from pyproject.toml + constraints.txt (ARGS="--upgrade-package NAME" to bump one)
lock:
	python3 tools/lock.py $(ARGS)

## clean: remove .venv and caches
clean:
	rm -rf .venv .venv-lock build dist *.egg-info .pytest_cache .hypothesis .ipynb_checkpoints
	find . -name .venv -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -prune -exec rm -rf {} +
