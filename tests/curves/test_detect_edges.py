"""Format detection at its edges: a console that printed one metric dict, a Markdown table in a ``.log``
file or among other lines."""

import pytest

from scalerl.curves import read_curves
from scalerl.curves.io import detect_format
from scalerl.errors import InputError

TRAINER_DICT = "{'loss': 0.0123, 'grad_norm': 1.5, 'learning_rate': 1e-06, 'reward': 0.5, 'epoch': 0.1}"


def _dicts(n):
    return [TRAINER_DICT.replace("0.5", str(0.5 + k / 100)).replace("'epoch': 0.1", f"'epoch': {0.1 * (k + 1):.1f}")
            for k in range(n)]


@pytest.mark.parametrize("name", ["train.log", "train.txt", "train.out", "stdout"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_a_trainers_printed_dicts_are_told_however_many(tmp_path, name, n):
    """One dict a Hugging Face Trainer printed (its 'epoch' in it), with tqdm's and the warnings' lines around
    it: a .log was refused ('give --format'), a .txt read as JSON lines ('not valid JSON')."""
    p = tmp_path / name
    p.write_text("Some weights of the model were not initialized\n"
                 " 10%|#         | 1/10 [00:01<00:09,  1.00s/it]\n" + "\n".join(_dicts(n)) + "\n", encoding="utf-8")
    assert detect_format(p) == "dict-lines"
    (curve,) = read_curves(p, "epoch", "reward")
    assert list(curve.y) == pytest.approx([0.5 + k / 100 for k in range(n)])
    assert list(curve.x) == pytest.approx([0.1 * (k + 1) for k in range(n)])


@pytest.mark.parametrize("name", ["metrics.log", "metrics.txt"])
def test_one_dict_that_is_all_the_file_holds_is_read(tmp_path, name):
    p = tmp_path / name
    p.write_text("{'step': 10, 'reward': 0.25}\n", encoding="utf-8")
    (curve,) = read_curves(p, "step", "reward")
    assert list(curve.x) == [10] and list(curve.y) == [0.25]


@pytest.mark.parametrize("name", ["run.log", "run.txt"])
def test_one_dict_among_other_lines_asks_for_the_format(tmp_path, name):
    """A dict without a step nor a Trainer's epoch among other output may be a config: not taken for a row
    unasked -- the error names --format dict-lines, which reads it."""
    p = tmp_path / name
    p.write_text("starting\n{'lr': 0.001, 'reward': 0.75}\ndone\n", encoding="utf-8")
    with pytest.raises(InputError, match="one printed dict.*--format dict-lines"):
        read_curves(p, "lr", "reward")
    (curve,) = read_curves(p, "lr", "reward", fmt="dict-lines")
    assert list(curve.y) == [0.75]


TABLE = "| Step | reward |\n|---|---|\n| 10 | 0.5 |\n| 20 | 0.625 |\n| 30 | 0.75 |\n"


@pytest.mark.parametrize("name", ["results.log", "results.out", "results.md", "results.txt"])
def test_a_markdown_table_is_read_in_a_log_file_too(tmp_path, name):
    """A .log holding a Markdown table was refused ('a text log without verl step lines ...')."""
    p = tmp_path / name
    p.write_text(TABLE, encoding="utf-8")
    assert detect_format(p) == "csv"
    (curve,) = read_curves(p, "Step", "reward")
    assert list(curve.x) == [10, 20, 30] and list(curve.y) == [0.5, 0.625, 0.75] and not curve.notes


@pytest.mark.parametrize("name", ["results.log", "results.md"])
def test_a_markdown_table_among_other_lines_is_read_with_a_note(tmp_path, name):
    """Text around the table was read as the header ("no y column 'reward'; available columns: 'Results:'")."""
    p = tmp_path / name
    p.write_text("Results after training:\n\n" + TABLE + "\nSaved to out/\n", encoding="utf-8")
    (curve,) = read_curves(p, "Step", "reward")
    assert list(curve.x) == [10, 20, 30] and list(curve.y) == [0.5, 0.625, 0.75]
    assert any("Markdown table of lines 3-7; 2 line(s) around it (line 1, 9) passed over" in n for n in curve.notes)


def test_a_pipe_delimited_table_without_a_rule_is_no_markdown_table(tmp_path):
    p = tmp_path / "results.log"
    p.write_text("step|reward\n10|0.5\n20|0.6\n", encoding="utf-8")
    with pytest.raises(InputError, match="give --format"):
        read_curves(p, "step", "reward")
    (curve,) = read_curves(p, "step", "reward", fmt="csv")
    assert list(curve.y) == [0.5, 0.6]
