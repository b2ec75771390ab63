# Every target sets itself up on a fresh machine: a virtual environment in .venv, the CPU
# build of torch pinned to 2.13.0 (a bare `torch` would pull a multi-GB CUDA build), and
# scalerl in editable mode with its dev extras.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip
TORCH_CPU ?= torch==2.13.0
STAMP   = $(VENV)/.installed

.PHONY: demo test test-all forecast bench-forecast setup clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_CPU)"
	$(PIP) install -q -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

## The main job: the CPU demo (tiny model, ScaleRL recipe, live forecast, report).
demo: $(STAMP)
	$(VENV)/bin/scalerl demo --output runs/demo --overwrite

## The forecaster alone, on the real run log shipped in examples/.
forecast: $(STAMP)
	$(VENV)/bin/scalerl fit examples/data/real_rl_curves.csv --x cum_wall_hours --y val_score \
	  --run verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538 --fit-until 4.13 --predict 8.25 16.5 \
	  --verdict 8.25 16.5 --plot runs/forecast.png

## The test suite CI runs, on two pytest-xdist workers (work stealing: the slow end-to-end tests do not
## pile up on one worker; tests that start a Ray cluster take turns). GPU tests are skipped without a
## GPU; `extended` ones are left to test-all. One torch / OpenMP thread per process: two workers that
## each took torch's default of one thread per core (and their subprocesses as many again) fought over
## the two cores -- the training tests ran ~2x slower (python benchmarks/test_threads.py measures it).
TEST_THREADS ?= 1
test: $(STAMP)
	OMP_NUM_THREADS=$(TEST_THREADS) $(PY) -m pytest -q -n 2 --dist worksteal --durations=15

## Every test, the `extended` end-to-end variants too (README, Development).
test-all: $(STAMP)
	OMP_NUM_THREADS=$(TEST_THREADS) $(PY) -m pytest -q -n 2 --dist worksteal --durations=15 -m "not gpu"

bench-forecast: $(STAMP)
	$(PY) benchmarks/forecast_real_backtests.py
	$(PY) benchmarks/forecast_speed.py
	$(PY) benchmarks/forecast_recovery.py
	$(PY) benchmarks/forecast_corpus.py
	$(PY) benchmarks/excursions.py
	$(PY) benchmarks/live_forecast_cost.py
	$(PY) benchmarks/big_logs.py
	$(PY) benchmarks/compare_verdicts.py
	$(PY) benchmarks/seed_intervals.py
	$(PY) benchmarks/log_readers.py
	$(PY) benchmarks/resumed_logs.py

clean:
	rm -rf $(VENV) runs .pytest_cache
