"""Choosing a run (--run: a name, a tracker's run id, or the start of one) and naming a column that
is not there, in the real trackers' stores of tests/curves/data."""

from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import Curve, read_curves
from scalerl.curves.io import _pick_runs
from scalerl.errors import InputError

DATA = Path(__file__).parent / "data"
MLFLOW_VAL = "val-core/openai/gsm8k/reward/mean@1"


@pytest.mark.parametrize("store,x,y,name,run_id", [
    ("mlflow_sqlite.db.gz", "step", MLFLOW_VAL, "grpo-b", "74eff21c256347a9b71718fc06fa4634"),  # read compressed
    ("wandb_runs.tar.gz", "step", "val-core/gsm8k/acc/mean@1", "grpo-b", "grpob001"),  # a wandb directory, archived
    ("trackio_runs.tar.gz", "step", "eval/reward", None, None),
])
def test_a_run_is_picked_by_its_name_its_id_or_the_start_of_its_id(tmp_path, store, x, y, name, run_id):
    path = DATA / store
    if store.startswith("trackio"):  # two projects in one archive: read one directory of it
        import tarfile
        with tarfile.open(path) as tar:
            tar.extractall(tmp_path, filter="data")
        path, name, run_id = tmp_path / "trackio", "grpo-demo/run-b", "b9ecc9e229df4761a7caf7f2758ef9d6"
    every = read_curves(path, x, y)
    by_name = read_curves(path, x, y, run=name)
    assert [c.name for c in by_name] == [name] and by_name[0].run_id == run_id
    for key in (run_id, run_id[:8]):
        [picked] = read_curves(path, x, y, run=key)
        assert picked.name == name
        np.testing.assert_array_equal(picked.y, by_name[0].y)
    with pytest.raises(InputError, match=rf"no run named 'zzzzzzzz'; runs in the file: .*'{name}' \({run_id}\)"):
        read_curves(path, x, y, run="zzzzzzzz")
    assert len(every) > 1


def test_a_short_or_shared_id_prefix_is_not_a_guess():
    curves = [Curve.from_arrays([1, 2], [0.1, 0.2], name=n) for n in ("a", "b")]
    curves = [Curve(**{**c.__dict__, "run_id": rid}) for c, rid in zip(curves, ("5f3a9c01aa", "5f3a9c77bb"))]
    with pytest.raises(InputError, match="no run named '5f3'"):  # shorter than 6 characters: no prefix match
        _pick_runs(Path("log"), curves, "5f3")
    with pytest.raises(InputError, match=r"'5f3a9c' begins the ids of 2 runs: 'a' \(5f3a9c01aa\), 'b' \(5f3a9c77bb\)"):
        _pick_runs(Path("log"), curves, "5f3a9c")
    assert [c.name for c in _pick_runs(Path("log"), curves, "5f3a9c7")] == ["b"]


def test_an_unknown_column_among_hundreds_names_the_likely_ones(tmp_path):
    # A real trainer logs hundreds of metrics a step: the message suggests, it does not list them all.
    log = tmp_path / "metrics.csv"
    cols = ["step", "timing_s/step", "val-core/openai/gsm8k/reward/mean@1"] + [f"actor/m{i:03d}" for i in range(200)]
    log.write_text(",".join(cols) + "\n" + ",".join("1" for _ in cols) + "\n")
    with pytest.raises(InputError) as exc:
        read_curves(log, "step", "val-core/openai/gsm8k/acc/mean@1")
    message = str(exc.value)
    assert "did you mean 'val-core/openai/gsm8k/reward/mean@1'?" in message
    assert "203 columns" in message and "more)" in message and "actor/m150" not in message
    with pytest.raises(InputError, match=r"no x column 'tokens'; 203 columns, among them 'step', 'timing_s/step'"):
        read_curves(log, "tokens", "val-core/openai/gsm8k/reward/mean@1")


def test_a_glob_for_y_reads_every_evaluation_set(tmp_path):
    """--y 'eval/*/avg_score': each run's curve of each matching metric, named '<run> | <metric>';
    no match says which metrics there are; a name that is itself a column is that column."""
    import gzip

    log = tmp_path / "skyrl.log"
    log.write_bytes(gzip.decompress((DATA / "skyrl_console.log.gz").read_bytes()))
    curves = read_curves(log, "step", "eval/*/avg_score")
    assert [c.name for c in curves] == ["skyrl | eval/all/avg_score", "skyrl | eval/openai/gsm8k/avg_score"]
    np.testing.assert_array_equal(curves[0].y, read_curves(log, "step", "eval/all/avg_score")[0].y)
    with pytest.raises(InputError, match=r"no metric matches --y 'val/\*'; metric-like columns: 'eval/all/avg_score'"):
        read_curves(log, "step", "val/*")
    # fit takes one curve: --run names it, or a run (each of its matching metrics)
    [one] = read_curves(log, "step", "eval/*/avg_score", run="skyrl | eval/openai/gsm8k/avg_score")
    assert one.name == "skyrl | eval/openai/gsm8k/avg_score"
    assert len(read_curves(log, "step", "eval/*/avg_score", run="skyrl")) == 2
    with pytest.raises(InputError, match="'eval/x/avg_score' is not among the metrics --y matches"):
        read_curves(log, "step", "eval/*/avg_score", run="skyrl | eval/x/avg_score")
    literal = tmp_path / "star.csv"
    literal.write_text("step,acc*\n0,0.1\n1,0.2\n2,0.3\n3,0.35\n")
    assert [c.name for c in read_curves(literal, "step", "acc*")] == ["star"]


def test_a_glob_for_y_leaves_the_x_column_out(tmp_path):
    """A table with a column per run (step, arm_a, arm_b) read with --y '*': each arm is a curve; the
    step column, though the glob matches it, is the x axis, not a metric left out with a note."""
    table = tmp_path / "by_step.csv"
    table.write_text("step,arm_a,arm_b\n25,0.50,0.40\n50,0.55,0.45\n75,0.58,\n100,0.60,0.50\n")
    curves = read_curves(table, "step", "*")
    assert [c.name for c in curves] == ["by_step | arm_a", "by_step | arm_b"]
    assert not any("left out" in note for c in curves for note in c.notes)
