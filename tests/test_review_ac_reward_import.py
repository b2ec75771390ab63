"""Review ac's strict-xfail reproducer: the package route's undo (reward_worker._import_package_module) removes
from sys.modules every module imported on the way -- numpy too -- and the file's own import then fails."""

import json
import os
import subprocess
import sys
import textwrap

import pytest


@pytest.mark.xfail(strict=True, reason="review ac: the package route's undo drops numpy from sys.modules; the "
                                       "file's own import of numpy then fails")
def test_a_reward_file_in_a_failing_package_that_imports_numpy_loads_on_its_own(tmp_path):
    """proj/__init__.py imports numpy and then fails (a project root's __init__, never meant to be imported with
    the file); proj/rewards.py imports numpy. 86e8e43: the package route fails, every module it imported is
    removed from sys.modules, and the file is imported on its own -- whose `import numpy` loads numpy's C
    extension a second time: "ImportError: cannot load module more than once per process". The worker's
    load_error: "cannot import .../rewards.py as proj.rewards (ImportError: cannot import name 'MISSING' ...) nor
    on its own (ImportError: cannot load module more than once per process)". The file loads on its own
    (scalerl before 2b90c66 did, and so does `python rewards.py`)."""
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import numpy\nfrom .settings import MISSING\n")
    (pkg / "settings.py").write_text("X = 1\n")
    (pkg / "rewards.py").write_text(textwrap.dedent("""\
        import numpy as np

        def score(completion, answer):
            return float(np.float64(1.0)) if completion.strip() == answer.strip() else -1.0
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-m", "scalerl.tasks.reward_worker", f"{pkg / 'rewards.py'}:score"],
                          input=json.dumps({"prompt": "p", "completion": "1", "answer": "1"}) + "\n",
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert lines and lines[0] == {"ready": True}, lines
    assert lines[1] == {"value": 1.0}
