"""The math datasets users bring, in their real shapes (built here as small local files): each reads
with the right prompt and answer, or is refused in one line saying what to pass -- never a wrong
reference read silently, which would score every right completion -1."""

import csv
import json
import re
import shlex

import pytest

from scalerl.errors import InputError
from scalerl.tasks.datasets import load_rows
from scalerl.tasks.math_grading import math_verify_reward


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


def _hub_snapshot(root, files):
    """A hub dataset's files as ``snapshot_download`` / ``git clone`` leave them: a README, the
    download cache's hidden folder, and ``files`` (relative path -> rows) as parquet or JSON Lines."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (root / ".cache" / "huggingface").mkdir(parents=True)
    (root / ".cache" / "huggingface" / "stale.parquet.lock").write_text("")
    (root / "README.md").write_text("---\nconfigs:\n- config_name: default\n---\n# a dataset\n")
    for name, rows in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".parquet"):
            pq.write_table(pa.Table.from_pylist(rows), path)
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _gsm8k(i):
    return {"question": f"Natalia sold {i} clips. How many?", "answer": f"She sold {i} clips.\n#### {i}"}


def test_a_hub_snapshot_of_parquet_shards_reads_its_split_in_shard_order(tmp_path):
    """A hub dataset downloaded as it is (``data/train-00000-of-00002.parquet``, ...) was refused: 'a
    directory of data files, give one file'."""
    root = _hub_snapshot(tmp_path / "gsm8k", {
        "data/train-00001-of-00002.parquet": [_gsm8k(3), _gsm8k(4)],
        "data/train-00000-of-00002.parquet": [_gsm8k(1), _gsm8k(2)],
        "data/test-00000-of-00001.parquet": [_gsm8k(9)],
    })
    rows = load_rows(root, "question", "answer")
    assert [(r.row, r.answer[-4:]) for r in rows] == [(1, "## 1"), (2, "## 2"), (3, "## 3"), (4, "## 4")]
    assert math_verify_reward("\\boxed{3}", rows[2].answer) == 1.0
    assert [r.answer[-1] for r in load_rows(root, "question", "answer", split="test")] == ["9"]
    with pytest.raises(InputError, match=r"gsm8k: no data file of split 'validation' .*splits: test, train; choose "
                                         r"one: --set 'task.settings=\{split: NAME\}'"):
        load_rows(root, "question", "answer", split="validation")


def test_a_snapshot_whose_files_name_no_split_is_its_train_split(tmp_path):
    """DAPO-Math-17k's ``data/dapo-math-17k.parquet``, DeepScaleR's ``deepscaler.json``: the hub's rule,
    files that name no split are the train split."""
    dapo = {"data_source": "math_dapo", "ability": "MATH",
            "prompt": [{"role": "user", "content": "Solve: 2+2. Answer: $Answer"}],
            "reward_model": {"ground_truth": "4", "style": "rule-lighteval/MATH_v2"},
            "extra_info": {"index": "a1b2"}}
    root = _hub_snapshot(tmp_path / "DAPO-Math-17k", {"data/dapo-math-17k.parquet": [dapo]})
    [row] = load_rows(root, answer_field="reward_model.ground_truth")
    assert (row.prompt, row.answer) == ("Solve: 2+2. Answer: $Answer", "4")
    root = tmp_path / "MATH-500"
    _hub_snapshot(root, {"test.jsonl": [{"problem": "1+1?", "solution": "\\boxed{2}", "answer": "2"}]})
    with pytest.raises(InputError, match=r"MATH-500: no data file of split 'train' .*splits: test; choose one"):
        load_rows(root, "problem")
    assert [r.answer for r in load_rows(root, "problem", split="test")] == ["2"]


def test_a_snapshot_of_several_configurations_is_refused_naming_one_to_give(tmp_path):
    """openai/gsm8k's ``main/`` and ``socratic/``: reading both would train on every problem twice."""
    root = _hub_snapshot(tmp_path / "gsm8k", {"main/train-00000-of-00001.parquet": [_gsm8k(1)],
                                              "socratic/train-00000-of-00001.parquet": [_gsm8k(1)]})
    with pytest.raises(InputError, match=r"gsm8k: a directory of several datasets \(configurations: main, socratic\); "
                                         r"give the folder of one: .*gsm8k/main"):
        load_rows(root, "question")
    assert len(load_rows(root / "socratic", "question")) == 1


@pytest.mark.parametrize("name", ["train.jsonl.zst", "train.jsonl", "train.parquet.zst"])
def test_a_zstd_compressed_data_file_reads_as_the_file_it_holds(tmp_path, name):
    """``.jsonl.zst`` (what ``zstd`` and many dataset dumps write) was 'unknown data format .zst', and a
    zstd file named ``.jsonl`` 'not UTF-8 text'."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [_gsm8k(1), _gsm8k(2)]
    if ".parquet" in name:
        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows), buffer)
        raw = buffer.getvalue()
    else:
        raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    with pa.output_stream(str(tmp_path / name), compression="zstd") as out:
        out.write(raw)
    assert [r.answer[-1] for r in load_rows(tmp_path / name, "question")] == ["1", "2"]
    (tmp_path / name).write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    with pytest.raises(InputError, match=r"train.*: a damaged zst file"):
        load_rows(tmp_path / name, "question")


def test_open_reasoner_zero_pairs_read_as_prompt_and_answer(tmp_path):
    """ORZ's orz_math_57k_collected.json: a JSON array of [human turn, assistant ground truth] pairs --
    rows that are lists, refused as 'expected an object'."""
    pairs = [[{"from": "human", "value": "What is 1+1?"}, {"from": "assistant", "ground_truth": {"value": "2"}}],
             [{"from": "human", "value": "Solve x^2=4, x>0."}, {"from": "assistant", "ground_truth": {"value": 2}}]]
    path = tmp_path / "orz_math_57k_collected.json"
    path.write_text(json.dumps(pairs, indent=4))
    assert [(r.prompt, r.answer) for r in load_rows(path)] == [("What is 1+1?", "2"), ("Solve x^2=4, x>0.", "2")]
    path.write_text(json.dumps([["What is 1+1?", "2"]]))
    with pytest.raises(InputError, match=r"row 1: expected an object with fields 'prompt' and 'answer', got "
                                         r"\[\"What is 1\+1\?\", \"2\"\]"):
        load_rows(path)


@pytest.mark.parametrize("reference, completion", [
    ("\\$18.90", "so she paid \\boxed{\\$18.90}"),  # MATH-500's money answers: an escaped dollar sign
    ("\\$18.90", "The answer is \\boxed{18.90}"),
    ("\\$32,\\!348", "\\boxed{32348}"),
    ("$\\frac{1}{2}$", "\\boxed{0.5}"),  # a reference in its own math delimiters, as before
    ("The answer is $\\boxed{7}$.", "\\boxed{7}"),
])
def test_a_math_500_reference_with_an_escaped_dollar_is_read(tmp_path, reference, completion):
    """An escaped dollar (``\\$18.90``) was taken for a math delimiter: the reference was parsed as
    written, read as nothing, and every completion of the problem scored -1."""
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps({"problem": "How much?", "solution": "...", "answer": reference,
                                "subject": "Prealgebra", "level": 2, "unique_id": "test/prealgebra/1.json"}) + "\n")
    [row] = load_rows(path, "problem")
    assert math_verify_reward(completion, row.answer) == 1.0


def test_a_git_lfs_pointer_in_place_of_the_data_says_to_fetch_it(tmp_path):
    """A hub dataset cloned without git-lfs holds pointers: read as parquet, 'Parquet magic bytes not found'."""
    root = tmp_path / "DAPO-Math-17k"
    (root / "data").mkdir(parents=True)
    (root / "data" / "dapo-math-17k.parquet").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 123\n")
    for path in (root, root / "data" / "dapo-math-17k.parquet"):
        with pytest.raises(InputError, match=r"dapo-math-17k.parquet: a Git LFS pointer, not the data it stands for "
                                             r"\(a clone without git-lfs\); fetch the data: git lfs pull"):
            load_rows(path)


def test_an_sft_conversation_as_the_prompt_names_the_question_field(tmp_path):
    """NuminaMath-CoT / OpenR1-Math rows: ``messages`` ends with the solution; the error named no way out."""
    path = tmp_path / "numina.jsonl"
    path.write_text(json.dumps({"source": "olympiads", "problem": "What is 1+1?", "solution": "It is \\boxed{2}.",
                                "messages": [{"role": "user", "content": "What is 1+1?"},
                                             {"role": "assistant", "content": "It is \\boxed{2}."}]}) + "\n")
    with pytest.raises(InputError, match=r"ends with a message of role 'assistant'; a prompt ends with the user's turn "
                                         r"\(a conversation with its solution, as SFT data holds it: give the field of "
                                         r"the question alone: 'source', 'problem', 'solution'\? --set"):
        load_rows(path, "messages", "solution")
    [row] = load_rows(path, "problem", "solution")
    assert math_verify_reward("\\boxed{2}", row.answer) == 1.0


def test_an_evaluation_set_with_fields_of_its_own(tmp_path):
    """Training on DAPO-Math-17k (a conversation prompt, reward_model.ground_truth) and evaluating on
    AIME 2024 (Problem, Answer: int64) -- the usual setup -- could not be said: eval_data's files were
    read with the training data's fields ('missing field', and the fix it named broke the training file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scalerl.tasks.math import MathTask

    dapo = [{"prompt": [{"role": "user", "content": f"What is {i}+{i}?"}], "data_source": "math_dapo",
             "reward_model": {"ground_truth": str(2 * i), "style": "rule"}} for i in range(20)]
    pq.write_table(pa.Table.from_pylist(dapo), tmp_path / "dapo.parquet")
    aime = pa.table({"ID": ["2024-I-1", "2024-I-2"], "Problem": ["Find m+n.", "Find the remainder."],
                     "Solution": ["...", "..."], "Answer": pa.array([204, 25], pa.int64())})
    (tmp_path / "aime" / "data").mkdir(parents=True)
    pq.write_table(aime, tmp_path / "aime" / "data" / "train-00000-of-00001.parquet")
    task = MathTask(data=str(tmp_path / "dapo.parquet"), answer_field="reward_model.ground_truth", val_fraction=0.0,
                    eval_data={"aime": {"data": str(tmp_path / "aime"), "prompt_field": "Problem", "answer_field": "Answer"}})
    assert [(p.prompt, p.answer) for p in task.eval_sets()["aime"]] == [("Find m+n.", "204"), ("Find the remainder.", "25")]
    assert len(task.train_problems()) == 20 and task.train_problems()[3].answer == "6"
    with pytest.raises(InputError, match=r"eval_data 'aime': a set given as a mapping takes the keys data, prompt_field, "
                                         r"answer_field, split \(data required\), got file"):
        MathTask(data="x.jsonl", eval_data={"aime": {"file": "aime.parquet"}})


def test_an_evaluation_set_mapping_is_a_valid_task_setting(tmp_path):
    from scalerl.tasks import get_task

    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"prompt": f"{i}?", "answer": str(i)}) + "\n" for i in range(5)))
    (tmp_path / "v.jsonl").write_text(json.dumps({"question": "9?", "solution": "9"}) + "\n")
    task = get_task("math", data=str(tmp_path / "t.jsonl"),
                    eval_data={"val": {"data": str(tmp_path / "v.jsonl"), "prompt_field": "question",
                                       "answer_field": "solution"}})
    assert [p.answer for p in task.eval_sets()["val"]] == ["9"]


def test_an_evaluation_file_missing_a_field_says_how_to_name_its_own(tmp_path):
    from scalerl.tasks.math import MathTask

    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"prompt": f"{i}?", "answer": str(i)}) + "\n" for i in range(5)))
    (tmp_path / "aime.jsonl").write_text(json.dumps({"Problem": "9?", "Answer": 9}) + "\n")
    task = MathTask(data=str(tmp_path / "t.jsonl"), eval_data={"aime": str(tmp_path / "aime.jsonl")})
    with pytest.raises(InputError, match=r"aime.jsonl: row 1: missing field 'prompt' .* -- if other fields hold them, for this evaluation file alone: "
                                         r"--set 'task.settings=\{data: .*t.jsonl, eval_data: \{aime: \{data: .*aime.jsonl, prompt_field: "
                                         r"NAME, answer_field: NAME\}\}\}'"):
        task.eval_sets()


@pytest.mark.parametrize("kind", ["jsonl", "json"])
def test_a_row_naming_a_key_twice_is_refused_not_read_as_its_last(tmp_path, kind):
    """``{"answer": "3", "answer": "4"}``: Python's json keeps the last value without a word, so the row
    trained on "4"; CSV's repeated header and YAML's repeated key were already refused."""
    row = '{"prompt": "What is 1+2?", "answer": "3", "answer": "4"}'
    path = tmp_path / f"d.{kind}"
    path.write_text(row + "\n" + '{"prompt": "What is 2+2?", "answer": "4"}\n' if kind == "jsonl" else f"[{row}]")
    with pytest.raises(InputError, match="'answer' appears twice"):
        load_rows(str(path))


@pytest.mark.parametrize("missing", ["nan", "NaN", "<NA>"])
def test_an_answer_cell_holding_a_missing_value_written_out_is_refused(tmp_path, missing):
    """A CSV whose answer column went through ``astype(str)`` holds the text "nan" where the answer was
    missing: read as the answer "nan", the row could never be solved (a JSON NaN is refused); the text
    "None" stays an answer (some tasks have it)."""
    path = tmp_path / "d.csv"
    path.write_text(f"prompt,answer\nWhat is 1+2?,3\nWhat is 2+2?,{missing}\n")
    with pytest.raises(InputError, match=f"row 3: field 'answer' is the text '{missing}'"):
        load_rows(str(path))
    path.write_text("prompt,answer\nWhich is empty?,None\n")
    assert _answers(str(path)) == ["None"]


def test_a_parquet_map_answer_is_named_as_a_map_and_read_by_a_dotted_path(tmp_path):
    """A map column (pyarrow reads it as (key, value) pairs) was called "a list of 1 different answers";
    it is an object: the error names its keys and the dotted path, which now reads it (review g)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"prompt": ["What is 1+2?"], "answer": pa.array(
        [[("value", "3")]], type=pa.map_(pa.string(), pa.string()))}), path)
    with pytest.raises(InputError, match=r"is a map \(keys 'value'\).*answer_field: answer\.value"):
        load_rows(str(path))
    assert _answers(str(path), answer_field="answer.value") == ["3"]


@pytest.mark.parametrize("suffix, delimiter", [(".csv", ","), (".tsv", "\t")])
def test_csv_with_a_long_cell_is_read(tmp_path, suffix, delimiter):
    from scalerl.tasks.datasets import load_rows

    path = tmp_path / f"train{suffix}"
    long_prompt = "Summarise: " + "x" * 200_000  # a long-context prompt (pandas writes and reads it as it is)
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter)
        writer.writerow(["prompt", "answer"])
        writer.writerow([long_prompt, "1"])
        writer.writerow(["2+2=", "4"])
    rows = load_rows(path)
    assert [(r.prompt, r.answer) for r in rows] == [(long_prompt, "1"), ("2+2=", "4")]


# (review cw: a JSON integer longer than Python converts was a ValueError traceback)
@pytest.mark.parametrize("name, text", [
    ("big.jsonl", '{"prompt": "q", "answer": ' + "1" * 5000 + "}\n"),
    ("big.json", '[{"prompt": "q", "answer": ' + "1" * 5000 + "}]"),
])
def test_a_json_integer_past_pythons_digit_limit_is_read_as_its_digits(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert load_rows(path)[0].answer == "1" * 5000


# review fk: a prompt that is a missing value written out; a misspelt field named

def test_prompt_that_is_a_written_out_missing_value_is_refused(tmp_path):
    data = tmp_path / "problems.csv"
    data.write_text("prompt,answer\nWhat is 1+1?,2\nnan,4\nWhat is 3+3?,6\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 3.*'prompt'"):
        load_rows(data)


def test_misspelt_prompt_field_suggests_the_close_name(tmp_path):
    data = tmp_path / "problems.jsonl"
    data.write_text("".join(json.dumps({"promt": f"What is {i}+{i}?", "answer": str(2 * i)}) + "\n" for i in range(4)))
    with pytest.raises(InputError) as info:
        load_rows(data)
    message = str(info.value)
    assert "did you mean" in message or "prompt_field: promt" in message, message


def test_suggested_set_for_a_misspelt_field_names_that_field(tmp_path):
    from scalerl.config import override_value

    data = tmp_path / "problems.csv"
    data.write_text("prompt ,answer\nWhat is 1+1?,2\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_rows(data)
    m = re.search(r"--set 'task\.settings=(\{.*?\})'", str(info.value))
    assert m and "did you mean" in str(info.value), str(info.value)
    settings = override_value(m.group(1))
    rows = load_rows(data, prompt_field=settings["prompt_field"])  # now: missing field 'prompt' again
    assert rows[0].prompt == "What is 1+1?"


# review fo: the suggested --set reads back as the field, whatever its name holds
def _suggested_settings(tmp_path, field: str):
    """The ``task.settings`` the refusal of a file whose prompt field is ``field`` suggests, as a POSIX shell hands
    the pasted ``--set`` to the program and ``--set`` reads it."""
    from scalerl.config import override_value

    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps({field: "3+1?", "answer": "4"}) + "\n")
    with pytest.raises(InputError) as exc:
        load_rows(p)
    found = re.search(r"(--set '.*\}')(?= \(a nested)", str(exc.value))
    assert found, str(exc.value)
    argv = shlex.split(found.group(1))
    assert len(argv) == 2 and argv[0] == "--set", argv
    key, _, raw = argv[1].partition("=")
    assert key == "task.settings", argv
    return override_value(raw)


@pytest.mark.parametrize("field", ["prompt, en", "prompt}", "prompt]", "prompt,", "prompt ", "prompt's", "prompt #1"])
def test_suggested_set_reads_back_as_the_field(tmp_path, field):
    """Pasted into a shell and read by --set, the suggestion names the field (review fo: YAML's flow syntax; review
    fp: YAML's single quotes inside the shell's)."""
    assert _suggested_settings(tmp_path, field) == {"prompt_field": field}


@pytest.mark.parametrize("name", ["0o7", "08", "yes", "a: b", "it's", 'say "x"', "prompt ", "a.b"])
def test_a_suggested_field_name_reads_back_as_itself(name):
    from scalerl.config import override_value
    from scalerl.tasks.datasets import _set_settings

    argv = shlex.split(_set_settings("prompt_field", name))
    assert override_value(argv[1].partition("=")[2]) == {"prompt_field": name}


# review fq: a key with a dot of its own is reached by the path suggested; an evaluation file's suggestion quoted

def _suggested_value(message: str, after: str) -> dict:
    """The --set suggestion that follows ``after`` in ``message``, split as a POSIX shell and read as --set reads it."""
    tail = message.split(after, 1)[1]
    args = shlex.split(tail)  # raises ValueError on a quote the suggestion left open
    assert args[0] == "--set"
    from scalerl.config import override_value

    return override_value(args[1].partition("=")[2])


def test_nested_key_with_a_dot_suggestion_reads_back(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text(json.dumps({"meta": {"q.text": "What is 1+1?"}, "answer": "2"}) + "\n")
    with pytest.raises(InputError) as err:
        load_rows(f, "meta", "answer")
    settings = _suggested_value(str(err.value), "as a dotted path: ")
    rows = load_rows(f, settings["prompt_field"], "answer")  # the suggestion, followed
    assert rows[0].prompt == "What is 1+1?"


@pytest.mark.parametrize("fname", ["aime, 2024.jsonl", "it's.jsonl", "aime \U0001F3C6, 2024.jsonl"])  # (an emoji: FS)
def test_eval_file_suggestion_is_one_shell_argument_that_reads_back(tmp_path, fname):
    from scalerl.tasks.math import MathTask

    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"prompt": f"{i}?", "answer": str(i)}) + "\n"
                                              for i in range(5)))
    ev = tmp_path / fname
    ev.write_text(json.dumps({"Problem": "9?", "Answer": 9}) + "\n")
    task = MathTask(data=str(tmp_path / "t.jsonl"), eval_data={"aime": str(ev)})
    with pytest.raises(InputError) as err:
        task.eval_sets()
    settings = _suggested_value(str(err.value), "for this evaluation file alone: ")
    assert settings["eval_data"]["aime"]["data"] == str(ev)
    assert set(settings["eval_data"]["aime"]) == {"data", "prompt_field", "answer_field"}


# review fr: the longest key of a dotted path first; a set name quoted as a key

def test_suggested_dotted_path_reads_the_object_the_error_named(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text(json.dumps({"a.b": {"c": "right"}, "a": {"b": {"c": "wrong"}}, "answer": "2"}) + "\n")
    with pytest.raises(InputError) as err:
        load_rows(f, "a.b", "answer")  # key 'a.b' (a dotted key wins) holds an object
    settings = _suggested_value(str(err.value), "as a dotted path: ")
    assert settings == {"prompt_field": "a.b.c"}
    rows = load_rows(f, settings["prompt_field"], "answer")
    assert rows[0].prompt == "right"


def test_eval_set_named_like_a_merge_key_suggestion_reads_back(tmp_path):
    from scalerl.tasks.math import MathTask

    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"prompt": f"{i}?", "answer": str(i)}) + "\n"
                                              for i in range(5)))
    ev = tmp_path / "e.jsonl"
    ev.write_text(json.dumps({"Problem": "9?", "Answer": 9}) + "\n")
    task = MathTask(data=str(tmp_path / "t.jsonl"), eval_data={"<<": str(ev)})
    with pytest.raises(InputError) as err:
        task.eval_sets()
    settings = _suggested_value(str(err.value), "for this evaluation file alone: ")
    assert settings == {"data": str(tmp_path / "t.jsonl"),
                        "eval_data": {"<<": {"data": str(ev), "prompt_field": "NAME", "answer_field": "NAME"}}}
