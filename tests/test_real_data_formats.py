"""The math datasets users bring, in their real shapes (built here as small local files): each reads
with the right prompt and answer, or is refused in one line saying what to pass -- never a wrong
reference read silently, which would score every right completion -1."""

import json

import pytest

from scalerl.errors import InputError
from scalerl.tasks.datasets import load_rows
from scalerl.tasks.math import math_verify_reward


def _answers(path, **fields):
    return [row.answer for row in load_rows(path, **fields)]


def _write_table(table, path, kind):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    if kind == "parquet":
        pq.write_table(table, path)
    elif kind == "arrow":
        with pa.ipc.new_file(str(path), table.schema) as writer:
            writer.write_table(table)
    else:
        datasets.Dataset(table).save_to_disk(str(path))


@pytest.mark.parametrize("kind", ["parquet", "arrow", "saved"])
def test_a_float32_answer_column_reads_as_the_number_it_holds(tmp_path, kind):
    """float32 / float16 answer columns (a pandas frame cast to save space; numeric answer sets):
    pyarrow hands their cells on widened to a Python float, 1e-07 as 1.0000000116860974e-07 -- a
    reference against which the completion's right 0.0000001 scored -1."""
    import pyarrow as pa

    table = pa.table({
        "problem": ["a", "b", "c", "d", "e", "f"],
        "answer": pa.array([1e-7, 0.1, 2.675, 3.0, 1e20, 3.14159], pa.float32()),
        "half": pa.array([0.1, 2.5, 3.0, 1.0, 7.0, 8.0], pa.float16()),
        "reward_model": pa.array([{"ground_truth": 0.1}] * 6, pa.struct([("ground_truth", pa.float32())])),
        "answers": pa.array([[2.675]] * 6, pa.list_(pa.float32())),
    })
    path = tmp_path / f"numeric.{kind}"
    _write_table(table, path, kind)
    answers = _answers(path, prompt_field="problem", answer_field="answer")
    assert answers == ["0.0000001", "0.1", "2.675", "3", "100000000000000000000", "3.14159"]
    assert math_verify_reward("\\boxed{0.0000001}", answers[0]) == 1.0
    assert _answers(path, prompt_field="problem", answer_field="half") == ["0.1", "2.5", "3", "1", "7", "8"]
    assert _answers(path, prompt_field="problem", answer_field="reward_model.ground_truth") == ["0.1"] * 6
    assert _answers(path, prompt_field="problem", answer_field="answers") == ["2.675"] * 6  # (a list of one: below)


def test_a_missing_float32_answer_is_still_refused(tmp_path):
    import pyarrow as pa

    table = pa.table({"prompt": ["a", "b"], "answer": pa.array([2.5, None], pa.float32())})
    _write_table(table, tmp_path / "gap.parquet", "parquet")
    with pytest.raises(InputError, match="row 2: field 'answer' is empty"):
        load_rows(tmp_path / "gap.parquet")
    table = pa.table({"prompt": ["a", "b"], "answer": pa.array([2.5, float("nan")], pa.float32())})
    _write_table(table, tmp_path / "nan.parquet", "parquet")
    with pytest.raises(InputError, match="row 2: field 'answer' is nan"):
        load_rows(tmp_path / "nan.parquet")


@pytest.mark.parametrize("answer, text", [
    ([3], "3"),
    (["3"], "3"),
    (["\\frac{1}{2}"], "\\frac{1}{2}"),
    (["3", " 3"], "3"),  # one answer, repeated
    ('["2"]', "2"),  # Skywork-OR1's reward_model.ground_truth: a JSON text of a list
    ("['x^2+1']", "x^2+1"),  # Python's str() of a list
    ("[1, 2]", "[1, 2]"),  # unquoted: an interval, an answer itself
    ("[-2,7)", "[-2,7)"),
])
def test_an_answer_given_as_a_list_of_one_reads_as_that_answer(tmp_path, answer, text):
    """A list of one (``[3]``, or the text ``'["2"]'`` as Skywork-OR1 stores its ground truth) was
    refused as a list, or reached math-verify as its text."""
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"prompt": "p", "answer": answer}) + "\n")
    assert _answers(path) == [text]


@pytest.mark.parametrize("answer", [["3", "4"], '["3", "4"]', "['1/2', '0.5']"])
def test_a_list_of_different_answers_is_refused_even_as_text(tmp_path, answer):
    """A text of several answers (``'["3", "4"]'``) reached math-verify as its text: no completion
    matched it, every one scored -1, unsaid."""
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"prompt": "p", "answer": answer}) + "\n")
    with pytest.raises(InputError, match=r"row 1: field 'answer' is a list of 2 different answers .*keep one"):
        load_rows(path)


def test_skywork_or1_shaped_parquet(tmp_path):
    """Skywork-OR1-RL-Data's math split as verl parquet: a conversation prompt, the answers as a
    JSON text in reward_model.ground_truth."""
    import pyarrow as pa

    rows = [{"data_source": "train-math-deepscaler",
             "prompt": [{"role": "user", "content": "Find x if 2x = 1. Put the answer in \\boxed{}."}],
             "ability": "math", "reward_model": {"ground_truth": '["\\\\frac{1}{2}"]', "style": "rule"},
             "extra_info": {"index": 0, "model_difficulty": {"DeepSeek-R1-Distill-Qwen-7B": 11}}}]
    _write_table(pa.Table.from_pylist(rows), tmp_path / "math.parquet", "parquet")
    [row] = load_rows(tmp_path / "math.parquet", answer_field="reward_model.ground_truth")
    assert (row.prompt, row.answer) == ("Find x if 2x = 1. Put the answer in \\boxed{}.", "\\frac{1}{2}")
    assert math_verify_reward("\\boxed{0.5}", row.answer) == 1.0
