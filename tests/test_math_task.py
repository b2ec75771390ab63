import json
import threading

import pytest

from scalerl.errors import InputError
from scalerl.tasks import get_task
from scalerl.tasks.datasets import load_rows
from scalerl.tasks.math import MathTask, answer_region, math_verify_reward


@pytest.mark.parametrize(
    "completion, answer, expected",
    [
        ("The answer is \\boxed{42}.", "42", 1.0),
        ("so x = 42", "42", 1.0),
        ("The answer is $\\frac{2}{4}$", "0.5", 1.0),
        ("\\boxed{\\frac12}", "\\frac{1}{2}", 1.0),
        ("\\boxed{41}", "42", -1.0),
        ("<think>it is 41... no</think> \\boxed{42}", "42", 1.0),
        ("<think>the answer is 42", "42", -1.0),  # never stopped thinking
        ("<think>42</think>", "42", -1.0),  # nothing after the thinking
        ("nothing here", "42", -1.0),
        ("\\boxed{", "1", -1.0),
        ("", "1", -1.0),
    ],
)
def test_math_verify_reward(completion, answer, expected):
    assert math_verify_reward(completion, answer) == expected


def test_math_verify_reward_works_off_the_main_thread():
    # math-verify's own timeout uses signal.alarm, which raises outside the main thread.
    out = []
    thread = threading.Thread(target=lambda: out.append(math_verify_reward("\\boxed{42}", "42")))
    thread.start()
    thread.join()
    assert out == [1.0]


def test_answer_region():
    assert answer_region("a</think>b</think>c") == "c"
    assert answer_region("<think>a") is None
    assert answer_region("plain") == "plain"


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_math_task_from_jsonl_holds_out_val_disjointly(tmp_path):
    rows = [{"prompt": f"What is {i} + {i}?", "answer": 2 * i} for i in range(400)]
    task = MathTask(data=_write_jsonl(tmp_path / "train.jsonl", rows), val_fraction=0.1)
    train, val = task.train_problems(), task.eval_sets()["val"]
    assert 10 <= len(val) <= 80 and len(train) + len(val) == 400
    assert not {p.prompt for p in train} & {p.prompt for p in val}
    p = val[0]
    assert task.reward(p, f"\\boxed{{{p.answer}}}") == 1.0
    assert task.reward(p, "\\boxed{-1}") == -1.0


def test_math_task_eval_files_and_registry(tmp_path):
    train = _write_jsonl(tmp_path / "t.jsonl", [{"q": "1+1?", "a": "2"}, {"q": "2+2?", "a": "4"}, {"q": "3+3?", "a": "6"}])
    val = _write_jsonl(tmp_path / "v.jsonl", [{"q": "3+3?", "a": "6"}])
    task = get_task("math", data=train, eval_data={"val": val}, prompt_field="q", answer_field="a")
    assert [p.prompt for p in task.eval_sets()["val"]] == ["3+3?"]
    assert [p.prompt for p in task.train_problems()] == ["1+1?", "2+2?"]  # the val prompt is removed
    assert task.train_problems()[0].id == "t.jsonl:1"


def test_loader_reads_parquet_and_saved_hf_dataset(tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"prompt": "1+1?", "answer": "2"}, {"prompt": "2+2?", "answer": "4"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    assert [r.answer for r in load_rows(tmp_path / "d.parquet")] == ["2", "4"]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "hf"))
    assert [r.prompt for r in load_rows(tmp_path / "hf")] == ["1+1?", "2+2?"]


def test_loader_reads_a_json_array(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps([{"prompt": "p", "answer": 3}]))
    assert load_rows(tmp_path / "d.json")[0].answer == "3"


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"prompt": "a", "answer": "1"}', '{"prompt": "b"}'], r"d\.jsonl: row 2: missing field 'answer'"),
        (['{"prompt": "a", "answer": "1"}', "", '{"prompt": "b", "answer": "1"'], r"d\.jsonl: row 3: not valid JSON"),
        (['{"prompt": "", "answer": "1"}'], r"row 1: field 'prompt' is empty"),
        (['{"prompt": "a", "answer": null}'], r"row 1: field 'answer' is empty"),
        (['["a", "1"]'], r"row 1: expected an object"),
        ([], r"no rows"),
    ],
)
def test_loader_errors_name_file_and_row(tmp_path, lines, message):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=message):
        load_rows(path)


def test_loader_error_in_parquet_names_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"prompt": "a", "answer": "1"}, {"prompt": None, "answer": "2"}]), tmp_path / "d.parquet")
    with pytest.raises(InputError, match=r"d\.parquet: row 2: field 'prompt'"):
        load_rows(tmp_path / "d.parquet")


def test_loader_missing_path_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_rows(tmp_path / "missing.jsonl")
    (tmp_path / "d.csv").write_text("prompt,answer\n")
    with pytest.raises(InputError, match="unknown data format"):
        load_rows(tmp_path / "d.csv")
