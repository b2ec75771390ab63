"""``scalerl eval --data FILE`` evaluates every row of FILE as the set val, also on a run whose own
``eval_data`` named a val file (review t: the run's val won, silently -- a pass rate of its 10 problems
printed for FILE's 7), and keeps the run's other evaluation sets."""

import argparse
import json
import shlex

import pytest

from scalerl.commands.evaluate import _eval_task
from scalerl.errors import InputError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_eval_data_file_is_the_val_set_even_when_the_run_named_its_own(tmp_path):
    train = _jsonl(tmp_path / "train.jsonl", [{"prompt": f"{a}+1=", "answer": str(a + 1)} for a in range(40)])
    val = _jsonl(tmp_path / "val.jsonl", [{"prompt": f"{a}+2=", "answer": str(a + 2)} for a in range(10)])
    test = _jsonl(tmp_path / "test.jsonl", [{"prompt": f"{a}+3=", "answer": str(a + 3)} for a in range(7)])
    # What _run_settings reads from such a run's config.yaml, and the flags of `eval --run RUN --data test.jsonl`.
    base = {"task": "math", "data": train, "reward": None, "task_settings": {"data": train, "eval_data": {"val": val}},
            "reward_timeout": 10.0, "reward_workers": 1}
    args = argparse.Namespace(data=test, overrides=[], reward_workers=None)
    pick = {"task": "math", "data": test, "reward": None}
    task = _eval_task(args, pick, base)
    try:
        sets = task.eval_sets()
    finally:
        task.close()
    assert [p.prompt for p in sets["val"]] == [f"{a}+3=" for a in range(7)]


def test_eval_data_file_keeps_the_runs_other_sets(tmp_path):
    train = _jsonl(tmp_path / "train.jsonl", [{"prompt": f"{a}+1=", "answer": str(a + 1)} for a in range(40)])
    val = _jsonl(tmp_path / "val.jsonl", [{"prompt": f"{a}+2=", "answer": str(a + 2)} for a in range(10)])
    hard = _jsonl(tmp_path / "hard.jsonl", [{"prompt": f"{a}+9=", "answer": str(a + 9)} for a in range(5)])
    test = _jsonl(tmp_path / "test.jsonl", [{"prompt": f"{a}+3=", "answer": str(a + 3)} for a in range(7)])
    base = {"task": "math", "data": train, "reward": None,
            "task_settings": {"data": train, "eval_data": {"val": val, "hard": hard}}}
    task = _eval_task(argparse.Namespace(data=test, overrides=[], reward_workers=None),
                      {"task": "math", "data": test, "reward": None}, base)
    try:
        sets = task.eval_sets()
    finally:
        task.close()
    assert {name: len(problems) for name, problems in sets.items()} == {"val": 7, "hard": 5}


def test_a_dataset_directory_with_a_test_split_is_said_to_be_evaluated_at_train(tmp_path, capsys):
    """Review ag: `eval --data DIR` on a hub dataset's files (data/train-*.parquet, test.jsonl) evaluated the
    train split (train's default) without a word; a user evaluating more likely meant test."""
    from scalerl.tasks.data_files import local_splits

    (tmp_path / "ds" / "data").mkdir(parents=True)
    _jsonl(tmp_path / "ds" / "data" / "train-00000-of-00001.jsonl", [{"prompt": f"{a}+1=", "answer": str(a + 1)}
                                                                      for a in range(20)])
    _jsonl(tmp_path / "ds" / "test.jsonl", [{"prompt": f"{a}+3=", "answer": str(a + 3)} for a in range(7)])
    ds = str(tmp_path / "ds")
    assert local_splits(ds) == ["test", "train"] and local_splits(str(tmp_path / "ds" / "test.jsonl")) == []
    for overrides, said in (([], True), (["task.settings={split: test}"], False)):
        task = _eval_task(argparse.Namespace(data=ds, overrides=overrides, reward_workers=None),
                          {"task": "math", "data": ds, "reward": None}, {})
        try:
            n = len(task.eval_sets()["val"])
        finally:
            task.close()
        err = capsys.readouterr().err
        assert n == (20 if said else 7)
        assert ("holds the splits train, test; evaluating 'train' (the default) -- --set 'task.settings={split: "
                "test}' evaluates another" in err) == said, err


def test_a_dataset_directory_without_a_train_split_is_not_said_to_hold_one(tmp_path, capsys):
    """Review ak: `eval --data DIR` on a directory of test.jsonl and validation.jsonl (no train split) printed
    'holds the splits train, test, validation' -- then failed with 'no data file of split train'. The error
    names the splits that are there; no note."""
    from scalerl.errors import InputError

    (tmp_path / "ds").mkdir()
    for split in ("test", "validation"):
        _jsonl(tmp_path / "ds" / f"{split}.jsonl", [{"prompt": f"{a}+3=", "answer": str(a + 3)} for a in range(7)])
    ds = str(tmp_path / "ds")
    with pytest.raises(InputError, match="no data file of split 'train'"):
        task = _eval_task(argparse.Namespace(data=ds, overrides=[], reward_workers=None),
                          {"task": "math", "data": ds, "reward": None}, {})
        try:
            task.eval_sets()
        finally:
            task.close()
    assert "holds the splits train" not in capsys.readouterr().err


def test_a_run_whose_set_name_an_older_scalerl_accepted_is_still_evaluated(tmp_path):
    """Review ak: a check of an eval_data set's name refused a run an older scalerl trained with the set
    'AIME 2024' (its run log's columns 'AIME 2024/pass_rate') in `eval --run` and `train --resume`: only
    the names that break the run log's columns ('', '/') are refused."""
    train = _jsonl(tmp_path / "train.jsonl", [{"prompt": f"{a}+1=", "answer": str(a + 1)} for a in range(40)])
    val = _jsonl(tmp_path / "val.jsonl", [{"prompt": f"{a}+2=", "answer": str(a + 2)} for a in range(10)])
    # What _run_settings reads from such a run's config.yaml, and the flags of `eval --run RUN`.
    base = {"task": "math", "data": train, "reward": None,
            "task_settings": {"data": train, "eval_data": {"AIME 2024": val}}, "reward_timeout": 10.0, "reward_workers": 1}
    task = _eval_task(argparse.Namespace(data=None, overrides=[], reward_workers=None),
                      {"task": "math", "data": train, "reward": None}, base)
    try:
        assert len(task.eval_sets()["AIME 2024"]) == 10
    finally:
        task.close()


# Review FS: suggested --set values that read back as the name they give.


def _suggested(message: str, after: str) -> dict:
    """The ``--set`` that follows ``after`` in ``message``, split as a POSIX shell does and read as --set reads it."""
    from scalerl.config import override_value

    args = shlex.split(message.split(after, 1)[1])
    assert args[0] == "--set"
    key, _, raw = args[1].partition("=")
    assert key == "task.settings"
    return override_value(raw)


def test_object_field_suggestion_reads_the_field_inside_it(tmp_path):
    """Field 'a' is an object {'b': ...}: the suggested path a.b reads the record's own key 'a.b', another field."""
    from scalerl.tasks.datasets import load_rows

    f = tmp_path / "d.jsonl"
    f.write_text(json.dumps({"a": {"b": "inside a"}, "a.b": "the flat key", "answer": "2"}) + "\n")
    with pytest.raises(InputError) as err:
        load_rows(f, "a", "answer")
    msg = str(err.value)
    assert "as a dotted path: " in msg or "rename one of the two" in msg, msg
    if "as a dotted path: " in msg:  # a suggestion must read what it names: the field inside 'a'
        settings = _suggested(msg, "as a dotted path: ")
        assert load_rows(f, settings["prompt_field"], "answer")[0].prompt == "inside a", msg


def test_an_evaluation_files_missing_field_gives_its_own_setting_alone(tmp_path):
    """An evaluation file's missing field: the advice names the file's own fields -- the close name of the missing
    one, the other as the row has it -- and not task.settings' prompt_field, which would rename the training data's
    field too (the training data has 'prompt': that --set broke it)."""
    from scalerl.tasks.math import MathTask

    _jsonl(tmp_path / "t.jsonl", [{"prompt": f"{i}?", "answer": str(i)} for i in range(5)])
    ev = tmp_path / "aime.jsonl"
    _jsonl(ev, [{"question": "9?", "Answer": 9}])
    task = MathTask(data=str(tmp_path / "t.jsonl"), eval_data={"aime": str(ev)})
    with pytest.raises(InputError) as err:
        task.eval_sets()
    msg = str(err.value)
    assert "{prompt_field: " not in msg.split("for this evaluation file alone")[0], msg
    settings = _suggested(msg, "for this evaluation file alone: ")
    assert settings["eval_data"]["aime"] == {"data": str(ev), "prompt_field": "NAME", "answer_field": "NAME"}
    _jsonl(ev, [{"prompt": "9?", "Answer": 9}])
    with pytest.raises(InputError) as err:
        MathTask(data=str(tmp_path / "t.jsonl"), eval_data={"aime": str(ev)}).eval_sets()
    settings = _suggested(str(err.value), "for this evaluation file alone: ")
    assert settings["eval_data"]["aime"] == {"data": str(ev), "prompt_field": "prompt", "answer_field": "Answer"}
