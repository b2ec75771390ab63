"""Strict-xfail reproducer from review ad (reward_worker, 2907e2a): the package route's undo keeps the modules it
imported from outside the package, and one of the project root's then shadows the file's own sibling."""

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.xfail(strict=True, reason="review ad: a root module the failed package route imported stays in "
                   "sys.modules and shadows the file's sibling of that name")
def test_a_reward_file_whose_failing_package_imported_a_root_module_of_its_sibling_s_name_gets_its_sibling(tmp_path):
    """ROOT/config.py and ROOT/proj/config.py; proj/__init__.py does `import config` (ROOT's: ROOT is first on
    sys.path in the package route) and then fails; proj/rewards.py does `import config`, meaning its sibling (as
    `python proj/rewards.py` and scalerl before 2907e2a find it). 2907e2a undoes only proj.*, so the file's own
    import gets ROOT/config.py from sys.modules: the function scores -1 on a right answer."""
    (tmp_path / "config.py").write_text('NAME = "root config"\n')
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import config\nfrom .missing import X\n")
    (pkg / "config.py").write_text('NAME = "proj config"\n')
    (pkg / "rewards.py").write_text('import config\n\n\ndef score(completion, answer):\n'
                                    '    return 1.0 if config.NAME == "proj config" else -1.0\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-m", "scalerl.tasks.reward_worker", f"{pkg / 'rewards.py'}:score"],
                          input=json.dumps({"prompt": "p", "completion": "1", "answer": "1"}) + "\n",
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert lines[:2] == [{"ready": True}, {"value": 1.0}], (lines, proc.stderr[-2000:])
