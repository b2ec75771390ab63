import json
import logging
import re
import threading
import time

import pytest

from scalerl.errors import InputError
from scalerl.tasks import get_task
from scalerl.tasks.datasets import load_rows
from scalerl.tasks.math import MathTask
from scalerl.tasks.math_grading import answer_region, math_verify_reward


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


def test_a_math_verify_call_that_never_ends_is_stopped_off_the_main_thread(tmp_path):
    """Off the main thread (the default pipeline's generator threads) math-verify has no alarm, and
    sympy computing 99999999! holds the GIL in C: the call runs in a worker process, killed after
    ``verify_timeout``; it scores -1 and is counted, and the next call is scored as usual."""
    from scalerl.tasks.base import Problem

    task = MathTask(data=str(tmp_path / "unused.jsonl"), verify_timeout=2)
    five = Problem(id="a", prompt="p", answer="5")
    out = []

    def score():
        out.append(task.reward(five, "\\boxed{99999999!}"))
        out.append(task.reward(five, "so it is \\boxed{5}"))

    thread = threading.Thread(target=score)
    thread.start()
    thread.join(120)
    task.close()
    assert out == [-1.0, 1.0]
    stats = task.reward_stats()
    assert stats["calls"] == 2 and stats["timeouts"] == 1 and "exceeded 2 s" in stats["first_error"]
    with pytest.raises(InputError, match="verify_timeout must be a number of seconds > 0"):
        MathTask(data="x.jsonl", verify_timeout=float("nan"))


def test_math_verify_workers_score_a_batch_in_parallel_processes(tmp_path):
    """~2 ms a call, one at a time: 8,192 completions a step held the step up by ~19 s."""
    from scalerl.tasks.base import Problem, score_all

    task = MathTask(data=str(tmp_path / "unused.jsonl"), verify_workers=2)
    pairs = [(Problem(id=str(i), prompt="p", answer=str(i)), f"\\boxed{{{i if i % 3 else i + 1}}}") for i in range(12)]
    assert score_all(task, pairs) == [-1.0 if i % 3 == 0 else 1.0 for i in range(12)]
    assert task.reward_stats()["calls"] == 12 and len(task._verifier()._all) == 2
    assert task.settings()["verify_workers"] == 2
    task.close()
    for bad in (0, 1.5, True):
        with pytest.raises(InputError, match="verify_workers must be a whole number"):
            MathTask(data="x.jsonl", verify_workers=bad)


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


def test_too_few_distinct_prompts_for_a_val_set_says_how_to_give_one(tmp_path):
    rows = [{"prompt": f"What is {i % 2} + 1?", "answer": i % 2 + 1} for i in range(40)]  # 2 distinct prompts
    task = MathTask(data=_write_jsonl(tmp_path / "few.jsonl", rows), val_fraction=0.05)
    with pytest.raises(InputError, match=r"none of its 40 rows, 2 distinct prompts.*task.settings=\{data: .*few.jsonl, eval_data: \{val: FILE"):
        task.train_problems()


@pytest.mark.parametrize("settings, message", [({"max_val": 0}, r"max_val must be a whole number >= 1 .*got 0"),
                                                ({"max_val": -1}, r"max_val must .*got -1"),
                                                ({"val_fraction": 1.0}, r"val_fraction must be in \[0, 1\)"),
                                                ({"val_fraction": 0}, r"val_fraction 0 and no eval_data leave no "
                                                 r"evaluation set; give one with --set 'task.settings=\{data: .*, val_fraction: 0, eval_data"),
                                                # a set's name prefixes its run-log columns: '' made '/pass_rate'
                                                ({"eval_data": {"": "v.jsonl"}}, r"eval_data set name '': a name must"),
                                                ({"eval_data": {"a/b": "v.jsonl"}}, r"set name 'a/b'.*NAME/pass_rate"),
                                                ({"eval_data": {" val": "v.jsonl"}}, r"set name ' val'")])
def test_impossible_math_settings_are_one_line(tmp_path, settings, message):
    with pytest.raises(InputError, match=message):
        MathTask(data=str(tmp_path / "d.jsonl"), **settings)


def test_an_evaluation_set_named_by_a_number_is_named_by_its_text(tmp_path):
    """YAML reads `{eval_data: {2024: FILE}}`'s name as the number 2024: the set is '2024'."""
    assert list(MathTask(data=str(tmp_path / "d.jsonl"), eval_data={2024: "v.jsonl"}).eval_data) == ["2024"]


@pytest.mark.parametrize("name, settings, message", [
    ("math", {}, r"task 'math' reads its problems from a data file: give --data FILE"),
    ("arithmetic", {"data": "d.jsonl"}, r"--data \(task.data\) is for .*--task math.*'arithmetic' makes its own"),
    ("arithmetic", {"digitz": 2}, r"unknown setting 'digitz' of task 'arithmetic' \(task.settings\); did you mean "
                                  r"digits\? known: digits, n_train"),
    ("math", {"data": "d.jsonl", "val_frac": 0.1}, r"did you mean val_fraction\?"),
])
def test_a_task_setting_mistake_says_what_to_do(name, settings, message):
    # The constructors' own TypeError ("__init__() got an unexpected keyword argument") named neither.
    from scalerl.tasks import get_task

    with pytest.raises(InputError, match=message):
        get_task(name, **settings)


@pytest.mark.parametrize("name, settings, message", [
    # --set 'task.settings={eval_data: [val.jsonl]}': AttributeError ('list' has no 'items') reading the data
    ("math", {"eval_data": ["v.jsonl"]}, r"task 'math': task.settings.eval_data: expected dict\[str, str or dict\[str, str\]\] or str"),
    ("math", {"eval_data": None}, r"task.settings.eval_data: expected"),
    ("math", {"prompt_field": None}, r"task.settings.prompt_field: expected a string, got None"),  # AttributeError
    ("math", {"answer_field": 3}, r"task.settings.answer_field: expected a string, got 3 \(quote it in YAML\)"),
    ("math", {"val_fraction": "abc"}, r"task.settings.val_fraction: expected a number, got 'abc'"),  # '<=' not supported
    ("math", {"verify_workers": 2.0}, r"task.settings.verify_workers: expected an integer, got 2.0"),
    ("arithmetic", {"digits": 2.5}, r"task 'arithmetic': task.settings.digits: expected an integer"),  # TypeError
    ("arithmetic", {"seed": "a"}, r"task.settings.seed: expected an integer, got 'a'"),  # accepted, a str seed
])
def test_a_task_setting_of_the_wrong_type_is_named(tmp_path, name, settings, message):
    if name == "math":
        settings = {"data": _write_jsonl(tmp_path / "d.jsonl", [{"prompt": "1+1?", "answer": "2"}]), **settings}
    with pytest.raises(InputError, match=message) as info:
        get_task(name, **settings).train_problems()
    assert "\n" not in str(info.value)


def test_task_settings_are_converted_to_their_types(tmp_path):
    data = tmp_path / "d.jsonl"  # a Path, as the Python API may pass one
    rows = [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(40)]
    _write_jsonl(data, rows)
    task = get_task("math", data=data, eval_data=_write_jsonl(tmp_path / "v.jsonl", rows[:2]), val_fraction="1e-1")
    assert task.val_fraction == 0.1 and task.data == str(data) and task.eval_data["val"].endswith("v.jsonl")
    assert len(task.train_problems()) == 38


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
        # Python's json reads NaN (pandas writes a missing number so); as text it would be "nan".
        (['{"prompt": "a", "answer": "1"}', '{"prompt": "b", "answer": NaN}'],
         r"d\.jsonl: row 2: field 'answer' is nan \(a missing value\?\); fill it in or drop the row"),
        (['{"prompt": "a", "answer": -Infinity}'], r"row 1: field 'answer' is -inf"),
        (['{"prompt": "a", "answer": true}'], r"row 1: field 'answer' is the boolean true, not text; quote it"),
        (['{"prompt": NaN, "answer": "1"}'], r"row 1: field 'prompt' is nan"),
        # A lone surrogate, valid as a JSON escape, fails wherever the text is encoded (hashed, tokenized).
        (['{"prompt": "a", "answer": "1"}', '{"prompt": "x\\ud800", "answer": "7"}'],
         r"d\.jsonl: row 2: field 'prompt' holds text that is not valid Unicode \(a lone surrogate '\\ud800' at "
         r"character 1\); fix or drop the row"),
        (['{"prompt": "a", "answer": "\\udfff"}'], r"row 1: field 'answer' holds text that is not valid Unicode"),
        (['{"prompt": [{"role": "system", "content": "\\ud800"}, {"role": "user", "content": "a"}], "answer": "1"}'],
         r"row 1: field 'prompt' holds text that is not valid Unicode"),
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


def test_loader_missing_path_and_unknown_format(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="no such file"):
        load_rows(tmp_path / "missing.jsonl")
    # A hub-like name under a local directory is a mistyped path: not ~25 s of hub retries first.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    start = time.monotonic()
    with pytest.raises(InputError, match=r"^data/nosuch: no such file or directory$"):
        load_rows("data/nosuch")
    assert time.monotonic() - start < 5
    (tmp_path / "d.xlsx").write_text("prompt,answer\n")
    with pytest.raises(InputError, match="unknown data format"):
        load_rows(tmp_path / "d.xlsx")
    (tmp_path / "d.csv").write_text("prompt,answer\n")  # a header and no rows
    with pytest.raises(InputError, match="no rows"):
        load_rows(tmp_path / "d.csv")


def test_csv_and_tsv_rows_are_read_with_the_same_field_checks(tmp_path):
    data = tmp_path / "train.csv"
    data.write_text('question,solution\n"What is 1+1?",2\n"A prompt\nover two lines, with a comma",3\n')
    rows = load_rows(data, "question", "solution")
    assert [(r.row, r.prompt, r.answer) for r in rows] == [
        (2, "What is 1+1?", "2"), (3, "A prompt\nover two lines, with a comma", "3")]
    tsv = tmp_path / "train.tsv"
    tsv.write_text("prompt\tanswer\n2+2=\t4\n")
    assert [(r.prompt, r.answer) for r in load_rows(tsv)] == [("2+2=", "4")]
    # The row named is the line it starts on (header = line 1).
    (tmp_path / "empty.csv").write_text("prompt,answer\n1+1=,2\n2+2=,\n")
    with pytest.raises(InputError, match=r"empty.csv: row 3: field 'answer' is empty"):
        load_rows(tmp_path / "empty.csv")
    (tmp_path / "cols.csv").write_text("question,answer\n1+1=,2\n")
    with pytest.raises(InputError, match=r"row 2: missing field 'prompt' \(fields present: 'question', 'answer'\); "
                                         r"if another field holds it: --set 'task.settings=\{prompt_field: NAME\}'"):
        load_rows(tmp_path / "cols.csv")
    assert load_rows(tmp_path / "cols.csv", prompt_field="question")[0].prompt == "1+1="
    (tmp_path / "extra.csv").write_text("prompt,answer\n1+1=,2,3\n")
    with pytest.raises(InputError, match="row 2: 3 cells, but the header names 2 fields"):
        load_rows(tmp_path / "extra.csv")


def test_a_csv_quote_left_open_is_refused_naming_its_row_not_read_as_one_long_answer(tmp_path):
    # Python's csv reader, lenient, read the three rows after the open quote into one answer
    # ('2\n2+2=,4\n...'): rows lost and a wrong answer, silently.
    data = tmp_path / "d.csv"
    data.write_text('prompt,answer\n1+1=,2\n2+2=,"4\n3+3=,6\n4+4=,8\n')
    with pytest.raises(InputError, match=r"d\.csv: row 3: a quoted cell opens on this row and is never closed"):
        load_rows(data)
    # Text after a closing quote (the lenient reader dropped the quotes: '"a"b' read as 'ab').
    data.write_text('prompt,answer\n1+1=,2\n"say "hi" twice",6\n')
    with pytest.raises(InputError, match=r"row 3: not valid CSV .*a quote inside a quoted cell is written as two"):
        load_rows(data)
    # Quotes written as a CSV writer writes them still read, a line break inside a quoted cell too.
    data.write_text('prompt,answer\n"say ""hi""\ntwice",6\n5" screens,7\n')
    assert [(r.row, r.prompt, r.answer) for r in load_rows(data)] == [(2, 'say "hi"\ntwice', "6"),
                                                                        (4, '5" screens', "7")]


def test_the_math_task_trains_on_a_csv_with_its_own_field_names(tmp_path):
    rows = "".join(f'"What is {i} + {i}?",{2 * i}\n' for i in range(60))
    (tmp_path / "train.csv").write_text("question,solution\n" + rows)
    task = get_task("math", data=str(tmp_path / "train.csv"), prompt_field="question", answer_field="solution",
                    val_fraction=0.2)
    assert len(task.train_problems()) + len(task.eval_sets()["val"]) == 60
    assert task.train_problems()[0].answer.isdigit()


def test_every_task_setting_is_documented():
    """Each setting of the built-in tasks has a docstring and a row in docs/tasks.md."""
    import dataclasses
    from pathlib import Path

    from scalerl.config import field_docs
    from scalerl.tasks.arithmetic import ArithmeticTask

    docs = (Path(__file__).resolve().parents[1] / "docs" / "tasks.md").read_text()
    for cls in (MathTask, ArithmeticTask):
        documented = field_docs(cls)
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            assert documented.get(f.name), f"{cls.__name__}.{f.name} has no docstring"
            assert f"| `{f.name}` |" in docs, f"{cls.__name__}.{f.name} is not in docs/tasks.md"


def _verl_rows(n=40):
    """Rows as verl's examples/data_preprocess/gsm8k.py writes them: the prompt a conversation, the
    answer under reward_model.ground_truth."""
    return [{"data_source": "openai/gsm8k",
             "prompt": [{"role": "system", "content": "You are a careful solver."},
                        {"role": "user", "content": f"What is {i} + {i}? Let's think step by step."}],
             "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(2 * i)},
             "extra_info": {"split": "train", "index": i}} for i in range(n)]


def test_a_verl_parquet_with_a_conversation_prompt_and_a_nested_answer(tmp_path, user_model):
    import datasets
    from transformers import AutoTokenizer

    from scalerl.tasks.encoding import encode_problem

    path = tmp_path / "train.parquet"
    datasets.Dataset.from_list(_verl_rows()).to_parquet(str(path))  # as verl's preprocessing saves it
    rows = load_rows(path, answer_field="reward_model.ground_truth")
    assert rows[3].prompt == "What is 3 + 3? Let's think step by step." and rows[3].answer == "6"
    assert rows[3].messages == (("system", "You are a careful solver."), ("user", rows[3].prompt))

    task = MathTask(data=str(path), answer_field="reward_model.ground_truth", val_fraction=0.2)
    problem = task.train_problems()[0]
    assert problem.messages and problem.prompt == problem.messages[-1][1]
    # an instruct model gets the whole conversation through its chat template, system prompt included
    tok = AutoTokenizer.from_pretrained(user_model("llama"))
    ids = encode_problem(tok, problem)
    expected = tok.apply_chat_template(problem.conversation, add_generation_prompt=True, tokenize=True)
    assert ids == list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    assert "You are a careful solver." in tok.decode(ids)
    # a base model (no chat template) reads the turns' texts one after another
    tok.chat_template = None
    assert tok.decode(encode_problem(tok, problem)).startswith("You are a careful solver.\n\nWhat is")


def test_a_chat_template_that_does_not_compile_or_refuses_is_one_line(user_model):
    from transformers import AutoTokenizer

    from scalerl.tasks.base import Problem
    from scalerl.tasks.encoding import encode_problem

    tok = AutoTokenizer.from_pretrained(user_model("llama"))
    problem = Problem(id="train:6", prompt="2+3?", answer="5", messages=(("system", "Be terse."), ("user", "2+3?")))
    tok.chat_template = "{% for m in messages %}{{ m['content'] }{% endfor %}"
    with pytest.raises(InputError, match=r"chat template of '.*' does not compile \(unexpected '}', template line 1\); "
                                         r"fix chat_template in the model's tokenizer_config.json"):
        encode_problem(tok, problem)
    # Gemma's and Mistral's templates raise on a system message.
    tok.chat_template = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
                         "{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}")
    with pytest.raises(InputError, match=r"refuses problem train:6 \(System role not supported\); change the data .* "
                                         r"drop the system message or merge it into the user turn"):
        encode_problem(tok, problem)
    assert encode_problem(tok, Problem(id="train:7", prompt="2+3?", answer="5"))  # a user turn alone is accepted


def test_conversation_and_nested_field_errors(tmp_path):
    bad = _verl_rows(2)
    bad[1]["prompt"] = bad[1]["prompt"] + [{"role": "assistant", "content": "4"}]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"row 2: the conversation in 'prompt' ends with a message of role 'assistant'"):
        load_rows(path, answer_field="reward_model.ground_truth")
    with pytest.raises(InputError, match=r"row 1: missing field 'answer' \(fields present: .*'reward_model.ground_truth'"):
        load_rows(path)
    path.write_text(json.dumps([{"prompt": [{"role": "user", "content": 3}], "answer": "3"}]))
    with pytest.raises(InputError, match="field 'prompt' is not a conversation: message 1's content is 3, not text"):
        load_rows(path)
    # a key that holds the dots itself is that key, not a path
    path.write_text(json.dumps([{"a.b": "x", "a": {"b": "y"}, "prompt": "p"}]))
    assert load_rows(path, answer_field="a.b")[0].answer == "x"


def test_a_nan_in_a_numeric_parquet_column_is_a_missing_answer(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([{"prompt": "a", "answer": 1.0}, {"prompt": "b", "answer": float("nan")}])
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(InputError, match=r"d\.parquet: row 2: field 'answer' is nan \(a missing value\?\)"):
        load_rows(tmp_path / "d.parquet")


def test_bytes_that_are_not_utf8_and_a_byte_order_mark(tmp_path):
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_bytes(b'{"prompt": "a", "answer": "1"}\n{"prompt": "b", "answer": "2"}\n{"prompt": "\xe9t\xe9", "answer": "3"}\n')
    with pytest.raises(InputError, match=r"d\.jsonl: row 3: not UTF-8 text \(byte 12"):  # Latin-1, not UTF-8
        load_rows(jsonl)
    array = tmp_path / "d.json"
    array.write_bytes(b'[{"prompt": "\xff", "answer": "1"}]')
    with pytest.raises(InputError, match=r"d\.json: not UTF-8 text"):
        load_rows(array)
    latin = tmp_path / "d.csv"
    latin.write_bytes(b"prompt,answer\na,1\n\xe9t\xe9,2\n")
    with pytest.raises(InputError, match=r"d\.csv: row 3: not UTF-8 text \(byte 0"):  # the line, as for JSONL
        load_rows(latin)
    # what a spreadsheet or a Windows editor writes first: a byte-order mark, which is no part of the header
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfprompt,answer\nWhat is 1+1?,2\n")
    assert load_rows(bom)[0].answer == "2"
    bom_lines = tmp_path / "bom.jsonl"
    bom_lines.write_bytes(b'\xef\xbb\xbf{"prompt": "p", "answer": "1"}\n')
    assert load_rows(bom_lines)[0].prompt == "p"


def test_damaged_data_files_are_read_or_refused_never_a_traceback(tmp_path):
    """Every data format, cut short, with bytes flipped or garbage lines inserted: rows, or an
    InputError (non-UTF-8 bytes ended in a UnicodeDecodeError before)."""
    import random

    import datasets
    import pandas as pd

    rows = [{"prompt": f"What is {i}+{i}?", "answer": str(2 * i)} for i in range(40)]
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "d.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (clean / "d.json").write_text(json.dumps(rows))
    pd.DataFrame(rows).to_csv(clean / "d.csv", index=False)
    pd.DataFrame(rows).to_csv(clean / "d.tsv", index=False, sep="\t")
    datasets.Dataset.from_list(_verl_rows()).to_parquet(str(clean / "v.parquet"))
    crashes = []
    for name in ("d.jsonl", "d.json", "d.csv", "d.tsv", "v.parquet"):
        data, rng = (clean / name).read_bytes(), random.Random(name)
        answer = "reward_model.ground_truth" if name.startswith("v") else "answer"
        load_rows(clean / name, answer_field=answer)
        for i in range(30):
            b = bytearray(data)
            kind = i % 3
            if kind == 0:
                b = b[:rng.randrange(len(b))]
            elif kind == 1:
                for _ in range(rng.randint(1, 10)):
                    b[rng.randrange(len(b))] = rng.randrange(256)
            else:
                at = data.find(b"\n", rng.randrange(len(data)))
                b[at:at] = b"\n" + bytes(rng.randrange(256) for _ in range(20))
            damaged = tmp_path / f"{i}" / name
            damaged.parent.mkdir(exist_ok=True)
            damaged.write_bytes(bytes(b))
            try:
                load_rows(damaged, answer_field=answer)
            except InputError:
                pass
            except Exception as exc:  # noqa: BLE001 -- what the test looks for
                crashes.append(f"{name} #{i}: {type(exc).__name__}: {exc}")
    assert not crashes, "\n".join(crashes[:10])


def test_a_compressed_data_file(tmp_path):
    import bz2
    import gzip

    rows = [{"prompt": f"What is {i}+1?", "answer": str(i + 1)} for i in range(20)]
    text = "\n".join(json.dumps(r) for r in rows).encode()
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(text))
    (tmp_path / "d.jsonl.bz2").write_bytes(bz2.compress(text))
    for name in ("d.jsonl.gz", "d.jsonl.bz2"):
        assert [r.answer for r in load_rows(tmp_path / name)] == [r["answer"] for r in rows]
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(text + b'\n{"prompt": "x"}'))
    with pytest.raises(InputError, match=r"bad\.jsonl\.gz: row 21: missing field 'answer'"):
        load_rows(tmp_path / "bad.jsonl.gz")
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(text)[:40])
    with pytest.raises(InputError, match=r"cut\.jsonl\.gz: a damaged gz file"):
        load_rows(tmp_path / "cut.jsonl.gz")


def test_a_prompt_with_two_different_answers_is_warned_of_with_a_count(tmp_path, caplog):
    # Kept silently before: every completion right by one row was scored wrong by the other.
    rows = [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(40)]
    rows += [{"prompt": "3+1?", "answer": "4"}, {"prompt": "5+1?", "answer": "7"}, {"prompt": "3+1?", "answer": "5"}]
    task = get_task("math", data=_write_jsonl(tmp_path / "d.jsonl", rows))
    with caplog.at_level("WARNING", logger="scalerl.tasks.math"):
        train = task.train_problems()
    assert len(train) + len(task.eval_sets()["val"]) == 43  # warned of, not dropped
    [record] = [r for r in caplog.records if "different answers" in r.getMessage()]
    assert "2 prompt(s) appear with different answers (the first: rows 6 and 42, answers '6' and '7')" \
        in record.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="scalerl.tasks.math"):  # repeated rows that agree: no warning
        get_task("math", data=_write_jsonl(tmp_path / "e.jsonl", rows[:40] * 2)).train_problems()
    assert not [r for r in caplog.records if "different answers" in r.getMessage()]
    caplog.clear()
    spaced = rows[:40] + [{"prompt": "3+1? ", "answer": "5"}]  # the same prompt but for a trailing space
    with caplog.at_level("WARNING", logger="scalerl.tasks.math"):
        get_task("math", data=_write_jsonl(tmp_path / "f.jsonl", spaced)).train_problems()
    [record] = [r for r in caplog.records if "different answers" in r.getMessage()]
    assert "1 prompt(s) appear with different answers (the first: rows 4 and 41" in record.getMessage()


def test_an_evaluation_set_holding_a_problem_twice_is_warned_of(tmp_path, caplog):
    rows = [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(40)]
    val = rows[:5] + [rows[2]]
    task = get_task("math", data=_write_jsonl(tmp_path / "d.jsonl", rows[5:]),
                    eval_data={"val": _write_jsonl(tmp_path / "v.jsonl", val)})
    with caplog.at_level("WARNING", logger="scalerl.tasks.math"):
        assert len(task.eval_sets()["val"]) == 6  # warned of, kept
    [record] = [r for r in caplog.records if "repeat" in r.getMessage()]
    assert "evaluation set 'val': 1 problem(s) repeat an earlier one, prompt and answer (the first: rows 3 and 6)" \
        in record.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="scalerl.tasks.math"):  # training data repeated: upsampling, no warning
        get_task("math", data=_write_jsonl(tmp_path / "e.jsonl", rows * 2),
                 eval_data={"val": _write_jsonl(tmp_path / "w.jsonl", rows[:5])}).train_problems()
    assert not [r for r in caplog.records if "repeat" in r.getMessage()]


def test_a_chat_template_that_refuses_a_lone_user_turn_is_not_told_to_drop_a_system_message(user_model):
    """A template that wants a system message first refused the built-in task's one user turn, and
    the hint said to drop or merge the system message the problem did not have."""
    from transformers import AutoTokenizer

    from scalerl.tasks.base import Problem
    from scalerl.tasks.encoding import encode_problem

    tok = AutoTokenizer.from_pretrained(user_model("llama"))
    tok.chat_template = ("{% if messages[0]['role'] != 'system' %}{{ raise_exception('Conversation must start with a "
                         "system message') }}{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}")
    with pytest.raises(InputError) as caught:
        encode_problem(tok, Problem(id="train:7", prompt="2+3?", answer="5"))
    said = str(caught.value)
    assert "refuses problem train:7 (Conversation must start with a system message)" in said
    assert "drop the system message" not in said and "one user turn" in said and "--data" in said
    assert encode_problem(tok, Problem(id="train:8", prompt="2+3?", answer="5",
                                       messages=(("system", "Be terse."), ("user", "2+3?"))))


@pytest.mark.parametrize("name, text, message", [
    ("eu.csv", 'prompt;answer\n"What is 1/2?";"0,5"\n', "header 'prompt;answer' separates the fields with semicolons, "
                                                       "not commas; save it with commas (and decimal points)"),
    ("tabs.csv", "prompt\tanswer\n1+1=\t2\n", "separates the fields with tabs, not commas; name it .tsv"),
    ("bars.tsv", "prompt|answer\n1+1=|2\n", "separates the fields with vertical bars, not tabs; save it with tabs"),
])
def test_a_csv_whose_header_uses_another_separator_is_refused_saying_which(tmp_path, name, text, message):
    """A spreadsheet in a European locale saves "CSV" with semicolons (and decimal commas): read with
    commas its header was one field ("missing field 'prompt' (fields present: 'prompt;answer')") or a
    quoted cell "not valid CSV". Refused, naming the separator, not read another way: "0,5" is a
    decimal comma or a list, which no reading can tell."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
        load_rows(path)


_TABLE = [{"prompt": "What is 1+1?", "answer": "2"}, {"prompt": "What is 1/2?", "answer": "0.5"}]


@pytest.mark.parametrize("name, text", [
    # pandas' DataFrame.to_json, every orient (columns is its default)
    ("columns.json", lambda df: df.to_json()),
    ("split.json", lambda df: df.to_json(orient="split")),
    ("index.json", lambda df: df.to_json(orient="index")),
    ("table.json", lambda df: df.to_json(orient="table")),
    ("list.json", lambda df: json.dumps(df.to_dict(orient="list"))),
    ("lines.json", lambda df: df.to_json(orient="records", lines=True)),
    # rows under a key, as SQuAD-like and exported files keep them
    ("wrapped.json", lambda df: json.dumps({"data": _TABLE})),
    ("versioned.json", lambda df: json.dumps({"version": "1.0", "data": _TABLE}, indent=2)),
    ("versioned.jsonl", lambda df: json.dumps({"version": "1.0", "data": _TABLE})),
    ("splits.json", lambda df: json.dumps({"train": _TABLE, "test": _TABLE[:1]})),
    # a JSON array (or an indented object) written in a .jsonl file
    ("array.jsonl", lambda df: "\n  " + json.dumps(_TABLE, indent=2)),
    ("indented.jsonl", lambda df: json.dumps(_TABLE[0], indent=2)),
])
def test_a_json_document_of_any_shape_reads_as_its_rows(tmp_path, name, text):
    """A dict of columns read as one row whose prompt was 'empty or not text'; a wrapper or a
    pandas split/table/index document as one row 'missing field prompt'; an array after a blank
    line as rows that are not objects."""
    import pandas as pd

    path = tmp_path / name
    path.write_text(text(pd.DataFrame(_TABLE)))
    expected = _TABLE[:1] if name == "indented.jsonl" else _TABLE
    assert [{"prompt": r.prompt, "answer": r.answer} for r in load_rows(path)] == expected


def test_json_documents_that_do_not_read_as_rows_say_why(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"prompt": ["a", "b"], "answer": ["1"]}))
    with pytest.raises(InputError, match=r"d\.json: a table of columns .* of different lengths \('prompt': 2, "
                                         r"'answer': 1\)"):
        load_rows(path)
    path.write_text(json.dumps({"easy": _TABLE, "hard": _TABLE}))
    with pytest.raises(InputError, match=r"rows under several keys \('easy', 'hard'\), one per split; choose one: "
                                         r"--set 'task.settings=\{split: NAME\}'"):
        load_rows(path)
    assert len(load_rows(path, split="hard")) == 2
    # one row in a .json file, a conversation as its prompt, is that row
    path.write_text(json.dumps({"prompt": [{"role": "user", "content": "2+2?"}], "answer": 4}))
    assert [(r.prompt, r.answer) for r in load_rows(path)] == [("2+2?", "4")]


@pytest.mark.parametrize("line, message", [
    ('{"prompt": "a", "answer": "1"},', "a comma after the object; JSON Lines has one object a line and no commas"),
    ("# exported 2024-05-01", "a comment\\? JSON Lines has none; drop the line"),
    ('{"prompt": "a", "answer": "1"} {"prompt": "b", "answer": "2"}', "text after the object"),
])
def test_a_jsonl_line_that_is_not_json_says_what_it_holds(tmp_path, line, message):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "p", "answer": "0"}\n' + line + "\n")
    with pytest.raises(InputError, match=r"d\.jsonl: row 2: not valid JSON \(.*\): " + message):
        load_rows(path)


def test_utf16_text_and_a_compressed_file_are_told_by_their_bytes(tmp_path):
    """PowerShell's '>' writes UTF-16 with a byte-order mark ('not UTF-8 text (byte 0: b'\\xff')');
    a gzip file named .jsonl (as curl saves a served file) was 'not UTF-8 text' too, and a plain
    file named .jsonl.gz 'a damaged gz file'."""
    import gzip

    lines = "\r\n".join(json.dumps(r) for r in _TABLE) + "\r\n"
    (tmp_path / "ps.jsonl").write_bytes(lines.encode("utf-16"))
    (tmp_path / "ps.csv").write_bytes('prompt,answer\r\n"What is 1+1?",2\r\n"What is 1/2?",0.5\r\n'.encode("utf-16"))
    (tmp_path / "gz.jsonl").write_bytes(gzip.compress(lines.encode()))
    (tmp_path / "plain.jsonl.gz").write_bytes(lines.encode())
    (tmp_path / "ps.json.gz").write_bytes(gzip.compress(json.dumps(_TABLE).encode("utf-16")))
    for name in ("ps.jsonl", "ps.csv", "gz.jsonl", "plain.jsonl.gz", "ps.json.gz"):
        assert [(r.prompt, r.answer) for r in load_rows(tmp_path / name)] == [(t["prompt"], t["answer"]) for t in _TABLE]
    (tmp_path / "bad.jsonl").write_bytes((lines + '{"prompt": "x"}\n').encode("utf-16"))
    with pytest.raises(InputError, match=r"bad\.jsonl: row 3: missing field 'answer'"):  # named as the user's file
        load_rows(tmp_path / "bad.jsonl")


@pytest.mark.parametrize("answer, text", [
    (42.0, "42"),  # a float column's whole number (pandas makes an int column with a gap float)
    (1e20, "100000000000000000000"),  # '1e+20', which math-verify reads as no number
    (1e-07, "0.0000001"),
    (0.5, "0.5"),
    (-0.0, "0"),
    (b"3/4", "3/4"),  # a parquet binary column: "b'3/4'" before
])
def test_a_numeric_or_binary_answer_reaches_math_verify_as_its_number(tmp_path, answer, text):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"prompt": "p", "answer": answer}]), tmp_path / "d.parquet")
    [row] = load_rows(tmp_path / "d.parquet")
    assert row.answer == text
    assert math_verify_reward(f"\\boxed{{{text}}}", row.answer) == 1.0


@pytest.mark.parametrize("answer, message", [
    (["1/2", "0.5"], r"field 'answer' is a list of 2 different answers \(\[\"1/2\", \"0.5\"\]\), not one; math-verify "
                     r"compares each completion with one reference: keep one"),
    ([], r"field 'answer' is an empty list"),
    ({"value": 5}, r"field 'answer' is an object \(fields 'value'\), not text; name the field inside it as a dotted "
                   r"path: --set 'task.settings=\{answer_field: answer.value\}'"),
])
def test_an_answer_that_is_a_list_or_an_object_is_refused_saying_so(tmp_path, answer, message):
    """'empty or not text' before: a list of acceptable answers is not empty."""
    path = _write_jsonl(tmp_path / "d.jsonl", [{"prompt": "p", "answer": answer}])
    with pytest.raises(InputError, match=r"d\.jsonl: row 1: " + message):
        load_rows(path)


def test_a_csv_header_naming_a_field_twice_is_refused_not_read_as_its_last_column(tmp_path):
    # The reader kept the last 'answer' column: '3', silently, for a problem whose answer is 2.
    path = tmp_path / "d.csv"
    path.write_text("prompt,answer,answer\nWhat is 1+1?,2,3\n")
    with pytest.raises(InputError, match=r"d\.csv: row 2: field 'answer' is named by 2 columns of the header "
                                         r"\(columns 2, 3\); rename all but one"):
        load_rows(path)
    path.write_text("prompt,answer,note,note\nWhat is 1+1?,2,a,b\n")  # a repeated column not read is no matter
    assert load_rows(path)[0].answer == "2"


def test_conversation_prompts_in_other_shapes(tmp_path):
    """Content as a list of text parts (OpenAI's, TRL's multimodal format) reads as its text; a
    tool turn, ShareGPT's {from, value} or an image part is refused naming the message (each was
    'empty or not text')."""
    parts = [{"role": "system", "content": [{"type": "text", "text": "Be terse."}]},
             {"role": "user", "content": [{"type": "text", "text": "What is "}, {"type": "text", "text": "2+2?"}]}]
    path = _write_jsonl(tmp_path / "d.jsonl", [{"prompt": parts, "answer": "4"}])
    [row] = load_rows(path)
    assert row.prompt == "What is 2+2?" and row.messages == (("system", "Be terse."), ("user", "What is 2+2?"))
    for prompt, message in [
        ([{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}, {"role": "user", "content": "c"}],
         r"message 2 has the role 'tool'; a prompt conversation's roles are system, user, assistant"),
        ([{"from": "human", "value": "2+2?"}], r"message 1 has the fields 'from', 'value', ShareGPT's"),
        ([{"role": "user", "content": [{"type": "image", "image": "x.png"}, {"type": "text", "text": "?"}]}],
         r"message 1 holds a part of type 'image'; only text parts"),
        ([{"role": "user", "content": None}], r"message 1's content is null, not text"),
    ]:
        _write_jsonl(tmp_path / "d.jsonl", [{"prompt": prompt, "answer": "4"}])
        with pytest.raises(InputError, match=r"row 1: field 'prompt' is not a conversation: " + message):
            load_rows(path)


def test_an_arrow_file_and_directories_that_are_no_saved_dataset(tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.feather as feather

    data = datasets.Dataset.from_list(_TABLE)
    data.save_to_disk(str(tmp_path / "saved"))
    [arrow] = (tmp_path / "saved").glob("*.arrow")  # an Arrow stream, as datasets writes its files
    feather.write_feather(pa.Table.from_pylist(_TABLE), tmp_path / "d.feather")
    for path in (arrow, tmp_path / "d.feather"):
        assert [r.answer for r in load_rows(path)] == ["2", "0.5"]
    shards = tmp_path / "shards"
    shards.mkdir()
    for i, row in enumerate(_TABLE):
        _write_jsonl(shards / f"train-{i:05d}-of-00002.jsonl", [row])
    assert [r.answer for r in load_rows(shards)] == ["2", "0.5"]  # (test_real_data_formats: hub layouts)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty: a directory that holds no data file and no dataset"):
        load_rows(tmp_path / "empty")
    datasets.DatasetDict({"test": data}).save_to_disk(str(tmp_path / "dict"))
    with pytest.raises(InputError, match=r"dict: no split 'train'; splits: test; choose one: "
                                         r"--set 'task.settings=\{split: NAME\}'"):
        load_rows(tmp_path / "dict")


def test_an_eval_prompt_that_differs_in_whitespace_is_removed_from_training(tmp_path):
    """'What is 3+3? ' in the eval file and 'What is 3+3?' in training: the same problem, trained on
    and evaluated (prompts were matched exactly)."""
    rows = [{"q": f"What is {i}+{i}?", "a": str(2 * i)} for i in range(10)]
    train = _write_jsonl(tmp_path / "t.jsonl", rows)
    val = _write_jsonl(tmp_path / "v.jsonl", [{"q": "What is 3+3? ", "a": "6"}, {"q": "What  is 4+4?\n", "a": "8"}])
    task = get_task("math", data=train, eval_data={"val": val}, prompt_field="q", answer_field="a")
    assert len(task.eval_sets()["val"]) == 2
    assert [p.prompt for p in task.train_problems()] == [r["q"] for r in rows if r["a"] not in ("6", "8")]
    task = get_task("math", data=train, eval_data=train, prompt_field="q", answer_field="a")
    with pytest.raises(InputError, match=r"no training rows left after removing the evaluation prompts \(eval_data "
                                         r"'val' is the training file itself\)"):
        task.train_problems()


def test_a_saved_dataset_dict_trains_on_one_split_and_evaluates_on_another(tmp_path):
    """One ``split`` applied to ``data`` and ``eval_data`` alike: training on a saved DatasetDict's
    ``train`` and evaluating on its ``test`` (GSM8K as ``save_to_disk`` writes it) read ``train``
    twice and stopped with "no training rows left". ``eval_split`` names the evaluation's."""
    import datasets

    saved = tmp_path / "gsm8k"
    datasets.DatasetDict({
        "train": datasets.Dataset.from_list([{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(6)]),
        "test": datasets.Dataset.from_list([{"prompt": f"{i}+2=", "answer": str(i + 2)} for i in range(3)]),
    }).save_to_disk(str(saved))
    task = MathTask(data=str(saved), eval_data={"val": str(saved)}, eval_split="test")
    assert sorted(p.prompt for p in task.train_problems()) == [f"{i}+1=" for i in range(6)]
    assert [p.prompt for p in task.eval_sets()["val"]] == [f"{i}+2=" for i in range(3)]
    with pytest.raises(InputError, match=r"is the training file itself; a saved dataset's other split: eval_split: NAME"):
        MathTask(data=str(saved), eval_data={"val": str(saved)}).train_problems()


def test_a_split_chosen_for_one_saved_dataset_is_refused(tmp_path):
    """One saved ``Dataset`` (not a DatasetDict) has no splits: ``eval_split: test`` read the whole
    dataset, the training rows, and stopped with "no training rows left ... eval_split: NAME" -- the
    setting the user had given. The default split still reads it whole."""
    import datasets

    saved = tmp_path / "one"
    datasets.Dataset.from_list([{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(6)]).save_to_disk(str(saved))
    assert len(load_rows(saved)) == 6
    with pytest.raises(InputError, match=r"one: one saved Dataset, not a DatasetDict: it has no split 'test' to choose; "
                                         r"drop split / eval_split to read all of it, or save a DatasetDict"):
        MathTask(data=str(saved), eval_data={"val": str(saved)}, eval_split="test").train_problems()
    test = datasets.load_dataset("json", data_files=str(_write_jsonl(tmp_path / "t.jsonl", _TABLE)), split="train")
    test.save_to_disk(str(tmp_path / "from_train"))  # remembers the split it was loaded as
    assert len(load_rows(tmp_path / "from_train", split="train")) == 2


def test_references_no_completion_can_match_are_said_at_the_start(tmp_path):
    """A reference math-verify reads as nothing ('$', '\\boxed{}', '}{') scores every completion -1, the
    right one included: a pass rate capped below 1 without a word. The task now says which set holds such
    rows (a sample of each), naming one; a user's reward function, which reads answers its own way, and a
    clean file say nothing."""
    from scalerl.tasks.base import reference_notes

    rows = [{"prompt": f"What is {i} + {i}?", "answer": 2 * i} for i in range(60)]
    rows[3]["answer"], rows[7]["answer"] = "\\boxed{}", "$"
    data = _write_jsonl(tmp_path / "train.jsonl", rows)
    clean = _write_jsonl(tmp_path / "val.jsonl", [{"prompt": f"What is {i} - 1?", "answer": i - 1} for i in range(9)])
    task = get_task("math", data=data, eval_data={"val": clean})
    (note,) = reference_notes(task)
    assert note.startswith("math task, training: 2 of the first 60 reference answers cannot be matched")
    assert "row 4: '\\\\boxed{}'" in note and "--reward" in note
    broken = _write_jsonl(tmp_path / "aime.jsonl", [{"prompt": "Q?", "answer": "}{"}, {"prompt": "R?", "answer": "3"}])
    spoilt = get_task("math", data=data, eval_data={"val": clean, "aime": broken})
    assert reference_notes(spoilt)[1].startswith("math task, evaluation set 'aime': 1 of the first 2 reference answers")
    assert reference_notes(get_task("math", data=clean, val_fraction=0.3)) == []
    user = get_task("math", data=data, eval_data={"val": clean}, reward="tests.test_math_task:_always_right")
    assert reference_notes(user) == []


def _always_right(completion, answer):
    return 1.0


def test_an_evaluation_directory_without_the_split_says_how_to_choose_its_own(tmp_path):
    """MATH-500 downloaded holds test.jsonl only: an eval_data set naming its directory said to set
    task.settings' split -- the training data's, which on a training directory with a test split of its
    own (a gsm8k download) would have trained on that (review)."""
    from scalerl.errors import InputError

    rows = [{"prompt": f"What is {i} + {i}?", "answer": 2 * i} for i in range(40)]
    data = _write_jsonl(tmp_path / "train.jsonl", rows)
    (tmp_path / "math500").mkdir()
    _write_jsonl(tmp_path / "math500" / "test.jsonl", [{"problem": "1+1?", "answer": "2"}])
    task = get_task("math", data=data, eval_data={"math500": {"data": str(tmp_path / "math500"), "prompt_field": "problem"}})
    with pytest.raises(InputError) as err:
        task.eval_sets()
    message = str(err.value)
    assert "no data file of split 'train'" in message and "splits: test" in message
    assert ", eval_data: {math500: {data: " in message and "split: NAME}" in message
    assert "task.settings={split: NAME}" not in message


def _write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rows_held_out_past_max_val_are_not_silently_lost(tmp_path, caplog):
    from scalerl.tasks.registry import get_task

    data = _write_rows(tmp_path / "train.jsonl", [{"prompt": f"q{i}", "answer": str(i)} for i in range(1000)])
    with caplog.at_level(logging.WARNING):
        task = get_task("math", settings={"data": str(data), "val_fraction": 0.2, "max_val": 50})
        train, val = task.train_problems(), task.eval_sets()["val"]
    lost = 1000 - len(train) - len(val)
    assert len(val) == 50
    # Either every row is trained on or evaluated, or the rows that are neither are counted in a warning.
    assert lost == 0 or any(str(lost) in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING), \
        f"{lost} of 1000 rows are neither trained on nor evaluated, unsaid"


def test_training_rows_removed_for_overlapping_eval_set_are_counted(tmp_path, caplog):
    from scalerl.tasks.registry import get_task

    rows = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(100)]
    data = _write_rows(tmp_path / "train.jsonl", rows)
    val = _write_rows(tmp_path / "val.jsonl", rows[:90])  # an evaluation file that is most of the training data
    with caplog.at_level(logging.WARNING):
        task = get_task("math", settings={"data": str(data), "eval_data": {"val": str(val)}})
        train = task.train_problems()
    assert len(train) == 10  # 90 of the 100 training rows removed...
    # ...and said: a training set cut to a tenth without a word changes the experiment.
    assert any("90" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING), \
        "90 of 100 training rows were removed (their prompts are in eval set 'val') without a warning"


def test_a_failed_reward_call_never_pays_better_than_a_wrong_answer(tmp_path):
    from scalerl.tasks.registry import get_task

    data = _write_rows(tmp_path / "train.jsonl", [{"prompt": f"{i}+2=", "answer": str(i + 2)} for i in range(40)])
    reward = tmp_path / "judge.py"  # a judge's scale: +10 right, -5 wrong; it raises on output it cannot parse
    reward.write_text("def score(completion, answer):\n"
                      "    if completion == 'crash':\n"
                      "        raise ValueError('cannot parse')\n"
                      "    return 10.0 if completion.strip() == answer else -5.0\n")
    task = get_task("math", reward=f"{reward}:score", settings={"data": str(data)})
    try:
        problem = task.train_problems()[0]
        right, wrong, failed = (task.reward(problem, c) for c in (problem.answer, "wrong", "crash"))
    finally:
        task.close()
    assert (right, wrong) == (10.0, -5.0)
    assert failed <= wrong, f"a call that raised scored {failed}, better than the wrong answer's {wrong}"


# ---------------------------------------------------------------------------------------------------- review cw


@pytest.fixture
def quiet_math_verify():
    """math-verify logs every timeout with the whole completion."""
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    yield
    logging.getLogger("math_verify").setLevel(logging.NOTSET)


def test_math_verifys_own_timeout_is_counted_in_the_worker_and_on_the_main_thread(tmp_path, quiet_math_verify):
    # math-verify's 5 s limit stops 99999999! before the default verify_timeout (15 s) kills the worker: the
    # call was a plain wrong answer with reward_timeouts 0 (review cw), in the worker and on the main thread alike.
    from scalerl.tasks.base import Problem
    from scalerl.tasks.failure_tally import counting_failures

    task = MathTask(data=str(tmp_path / "unused.jsonl"))
    five = Problem(id="a", prompt="p", answer="5")
    out = []

    def generator_thread():  # the default pipeline scores in generator threads: the call goes to the worker
        with counting_failures() as tally:
            out.append(task.reward(five, "\\boxed{99999999!}"))
        out.append(tally.as_dict())

    thread = threading.Thread(target=generator_thread)
    thread.start()
    thread.join(60)
    assert out[0] == -1.0 and out[1]["timeouts"] == 1 and task.reward_stats()["timeouts"] == 1
    with counting_failures() as tally:  # pipeline=sync, scalerl eval: scored in this process
        assert task.rewards([(five, "\\boxed{99999999!}")]) == [-1.0]
    task.close()
    assert tally.as_dict()["timeouts"] == 1


def test_a_verify_timeout_shorter_than_math_verifys_import_still_scores(tmp_path):
    # (review cw: the worker imported math-verify inside its first call's limit; at 0.25 s every call timed out)
    from scalerl.tasks.base import Problem

    task = MathTask(data=str(tmp_path / "unused.jsonl"), verify_timeout=0.25)
    five = Problem(id="a", prompt="p", answer="5")
    out = []
    thread = threading.Thread(target=lambda: out.extend(task.reward(five, "\\boxed{5}") for _ in range(3)))
    thread.start()
    thread.join(60)
    stats = task.reward_stats()
    task.close()
    assert out == [1.0, 1.0, 1.0], stats


@pytest.mark.parametrize("reference", ["42.", "Answer: 7", "18 dollars", "The answer is 5"])
def test_a_reference_with_words_or_a_full_stop_around_its_answer_is_flagged(tmp_path, reference):
    # Wrapped as the answer, "42." is the text '42.' and "Answer: 7" a product of letters over 7: every right
    # completion scores -1, and the start's check (the reference written back as the answer) matched itself.
    data = _write_jsonl(tmp_path / "val.jsonl", [{"prompt": f"q{i}", "answer": reference} for i in range(3)])
    (note,) = MathTask(data=data, evaluate_only=True).reference_notes()
    assert "3 of the first 3 reference answers hold words or a full stop" in note and repr(reference) in note, note


def test_references_that_are_mathematics_are_not_flagged(tmp_path):
    answers = ["3\\sqrt{2}", "(1,2)", "2, 3", "\\$18.90", "5 apples", "\\frac{1}{2}", "x=5", "6 \\text{ cm}", "yes",
               "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "(-\\infty, 3]", "90^\\circ", "1,000",
               "2 and 3", "-1 and 1", "x=1 and x=2", "4abc", "2xyz"]  # (review cy: the last five were flagged)
    data = _write_jsonl(tmp_path / "val.jsonl", [{"prompt": f"q{i}", "answer": a} for i, a in enumerate(answers)])
    assert MathTask(data=data, evaluate_only=True).reference_notes() == []


def test_a_completion_cut_off_in_the_thinking_its_chat_template_opened_scores_minus_one(tmp_path):
    # DeepSeek-R1-Distill's and QwQ's generation prompts end with "<think>\n": the completion holds no <think>,
    # and one cut off mid-thought was graded whole, a \boxed{} guess in it passing (review cw).
    from scripted import ScriptedGenerator  # tests/scripted.py (tests/ is on the path: its conftest.py)

    from scalerl.generate.base import SamplingParams
    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.tasks.base import Problem
    from scalerl.train.evaluate import evaluate

    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = ("{% for m in messages %}User: {{ m['content'] }}\n{% endfor %}"
                               "{% if add_generation_prompt %}Assistant: <think>\n{% endif %}")
    task = MathTask(data=str(tmp_path / "unused.jsonl"))
    problems = [Problem(id="a", prompt="What is 2+3?", answer="5")]
    params = SamplingParams(max_new_tokens=64, temperature=1.0)
    cut = ScriptedGenerator(lambda ids, i: ("Okay, 2+3. Maybe \\boxed{5}? Hmm, wait, let me recheck", "length"))
    metrics = evaluate(cut, tokenizer, task, problems, 1, params)
    assert metrics["frac_truncated"] == 1.0 and metrics["pass_rate"] == 0.0  # still thinking: no final answer
    done = ScriptedGenerator(lambda ids, i: ("2+3 is 5.</think>\\boxed{5}", "stop"))
    assert evaluate(done, tokenizer, task, problems, 1, params)["pass_rate"] == 1.0


def test_a_think_tag_in_the_prompts_text_opens_nothing():
    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.tasks.encoding import graded_texts

    tokenizer = build_char_tokenizer()
    told = tokenizer("Reason inside <think> tags, then answer. 2+3=").input_ids  # an instruction, not an opening
    opened = tokenizer("2+3=? Assistant: Let me solve this step by step.\n<think>\n").input_ids
    assert graded_texts(tokenizer, [told, opened], ["5", "5"]) == ["5", "<think>5"]


@pytest.mark.parametrize("prompt, completion", [
    ("Answer directly, without <think> tags. What is 2 + 3? Put the answer in \\boxed{}.", "\\boxed{5}"),
    ("Begin your response with <think>. What is 2 + 3?", "<think>\n2 + 3 = 5\n</think>\n\\boxed{5}"),
])
def test_a_think_tag_named_in_the_users_turn_opens_no_thinking(prompt, completion):
    # (review cy: read anywhere in the prompt, it prefixed <think> to a bare right answer, which scored -1)
    import importlib.util
    from pathlib import Path

    from scalerl.tasks.encoding import encode_prompt, graded_texts

    path = Path(__file__).resolve().parents[1] / "examples" / "user_model.py"
    spec = importlib.util.spec_from_file_location("scalerl_examples_user_model_think", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tokenizer = module.build_tokenizer()  # byte-level BPE with a ChatML template: the turn ends "assistant\n"
    ids = encode_prompt(tokenizer, prompt)
    graded = graded_texts(tokenizer, [ids], [completion])[0]
    assert graded == completion and math_verify_reward(graded, "5") == 1.0


@pytest.mark.parametrize("reference, bare", [("Ans: 7", "7"), ("9 pts", "9")])
def test_a_reference_with_a_short_word_around_its_answer_is_flagged(reference, bare):
    from scalerl.tasks.math_grading import math_verify_reward
    from scalerl.tasks.math_references import misread_reference

    assert math_verify_reward(f"\\boxed{{{bare}}}", reference) == -1.0  # the bare right answer scores -1
    assert misread_reference(reference) == bare  # got None: no note



@pytest.mark.parametrize("stop", ["KeyboardInterrupt", "Terminated"])
def test_a_stop_during_the_reference_check_is_not_swallowed(monkeypatch, stop):
    """misread_reference caught BaseException to take math-verify's alarm: a Ctrl-C or SIGTERM landing in the start's
    check of the references (up to 256 a set, some at math-verify's 5 s limit) was swallowed and the run started."""
    import scalerl.tasks.math_references as refs
    from scalerl import errors

    exc = getattr(errors, stop, KeyboardInterrupt)

    def interrupted(text):
        raise exc()

    monkeypatch.setattr(refs, "parse_here", interrupted)
    with pytest.raises(KeyboardInterrupt):
        refs.misread_reference("Ans: 77")

# ------------------------------------------------------------------------------------------ flash attention
