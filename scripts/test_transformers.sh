#!/usr/bin/env bash
# The test suite against another transformers release (pyproject allows a range; CI runs the
# version `make setup` resolves). Builds .venv-transformers-VERSION beside .venv, CPU torch pinned.
#   scripts/test_transformers.sh 4.57.6            # the whole suite
#   scripts/test_transformers.sh 5.17.0 tests/test_hf_generator.py
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${1:?usage: scripts/test_transformers.sh VERSION [PYTEST ARGS...]}"; shift
VENV=".venv-transformers-$VERSION"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "torch==2.13.0"
  "$VENV/bin/python" -m pip install -q -e ".[dev]" "transformers==$VERSION"
fi
"$VENV/bin/python" -c "import transformers; print('transformers', transformers.__version__)"
exec "$VENV/bin/python" -m pytest -q "${@:-tests/}"
