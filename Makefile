# Every target sets itself up on a fresh machine: a virtual environment in .venv, the CPU
# build of torch pinned to 2.13.0 (a bare `torch` would pull a multi-GB CUDA build), and
# scalerl in editable mode with its dev extras.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip
TORCH_CPU ?= torch==2.13.0
STAMP   = $(VENV)/.installed

.PHONY: demo test test-all forecast bench setup clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_CPU)"
	$(PIP) install -q -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

## The main job: the CPU demo (tiny model, ScaleRL recipe, live forecast, report).
demo: $(STAMP)
	$(VENV)/bin/scalerl demo --output runs/demo

## The forecaster alone, on the real run log shipped in examples/.
forecast: $(STAMP)
	$(VENV)/bin/scalerl fit examples/data/real_rl_curves.csv --x cum_wall_hours --y val_score \
	  --run verl_training_log__grpo_run_deepseek7b_llm --fit-until 0.5 --plot runs/forecast.png

## The test suite CI runs (slow end-to-end tests included; GPU tests are skipped without a GPU).
test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) runs .pytest_cache
