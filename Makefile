# Thin wrapper: set-up is tools/bootstrap.py, everything else is
# `python -m minikernel ...` or pytest, run from the course's .venv.
PY := .venv/bin/python
ARGS ?=

.DEFAULT_GOAL := lab
# The test layers run in order even under `make -j`.
.NOTPARALLEL:
.PHONY: lab setup dashboard test test-solutions test-student test-notebooks test-browser \
        grade bench notebooks clean

## lab: set up (first time only) and start JupyterLab on chapters/ (and visdom beside it)
lab: setup
	$(PY) -m minikernel lab $(ARGS)

## dashboard: start the visdom server of the live dashboards on 127.0.0.1:8097
dashboard: setup
	$(PY) -m minikernel dashboard $(ARGS)

## setup: create .venv with the pinned packages (instant when up to date)
setup:
	python3 tools/bootstrap.py

## test: everything CI runs, in layers; stops at the first failing layer
test:
	python3 tools/bootstrap.py --system
	@$(MAKE) --no-print-directory test-solutions test-student test-notebooks test-browser

test-solutions:
	@echo "==> [1/4] unit + differential tests, references on (MINIKERNEL_SOLUTIONS=all)"
	MINIKERNEL_SOLUTIONS=all $(PY) -m pytest tests -m "not browser" -n 2

test-student:
	@echo "==> [2/4] the same tests in student mode (MINIKERNEL_SOLUTIONS empty)"
	MINIKERNEL_SOLUTIONS= $(PY) -m pytest tests -m "not browser" -n 2

test-notebooks:
	@echo "==> [3/4] notebooks against their stored outputs (nbval, references on)"
	MINIKERNEL_SOLUTIONS=all $(PY) -m pytest --nbval --nbval-current-env \
	    --nbval-sanitize-with chapters/sanitize.cfg chapters/*.ipynb -p no:randomly

test-browser:
	@echo "==> [4/4] browser tests: JupyterLab and visdom in headless Chromium"
	MINIKERNEL_SOLUTIONS=all $(PY) -m pytest tests -m browser

## grade: grade your exercises, e.g. make grade ARGS="1.2 --json"
grade: setup
	$(PY) -m minikernel grade $(ARGS)

## bench: time the reference kernels against PyTorch
bench: setup
	$(PY) -m minikernel bench $(ARGS)

## notebooks: re-execute chapters/*.py into chapters/*.ipynb
notebooks: setup
	$(PY) -m minikernel notebooks $(ARGS)

## clean: remove .venv and caches
clean:
	rm -rf .venv build dist *.egg-info .pytest_cache .hypothesis .ipynb_checkpoints
	find . -name .venv -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -prune -exec rm -rf {} +
