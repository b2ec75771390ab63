"""A math task's advice (reviews FU, FV): a ``--set 'task.settings={...}'`` advice pasted back as the message says (``--set`` replaces the mapping a
``--config`` file gave) must read the data and change nothing else."""

import argparse
import contextlib
import io
import json
import os
import re
import shlex

import pytest

from scalerl.errors import InputError


pytestmark = pytest.mark.filterwarnings("ignore")


# ---------------------------------------------------------------------------------------------------------------------
# Helpers


def _rows_file(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _set_item(message: str, after: str = "") -> str:
    """The KEY=VALUE of the (last) ``--set '...'`` a message advises after ``after``, as a POSIX shell passes it."""
    tail = message.split(after, 1)[1] if after else message
    quoted = re.findall(r"--set ((?:'[^']*'|\"'\")+)", tail)
    assert quoted, message
    return shlex.split(quoted[-1])[0]


def _train_settings(*args: str) -> dict:
    """``task.settings`` as ``scalerl train ARGS --print-config`` resolves them."""
    import yaml

    from scalerl.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["train", *args, "--print-config"]) == 0
    return yaml.safe_load(out.getvalue())["task"]["settings"]


def _train_error(capsys, *args: str) -> str:
    """The error ``scalerl train ARGS`` stops on (reading the data, before any model is built)."""
    from scalerl.cli import main

    capsys.readouterr()
    assert main(["train", *args]) != 0
    return capsys.readouterr().err


def _config(path, data, settings: dict):
    import yaml

    path.write_text(yaml.safe_dump({"task": {"name": "math", "data": str(data), "settings": settings}}))
    return path


# ---------------------------------------------------------------------------------------------------------------------
# Part 1: --set advice


def test_training_data_missing_split_advice_keeps_the_configs_settings(tmp_path, capsys):
    """The training data's missing-split advice ({split: NAME} alone), pasted after --config, drops the config's
    eval_data, fields and verify_timeout."""
    _rows_file(tmp_path / "ds" / "test.jsonl", [{"question": f"{i}+1?", "solution": str(i + 1)} for i in range(60)])
    aime = _rows_file(tmp_path / "aime.jsonl", [{"question": f"{i}*7?", "solution": str(7 * i)} for i in range(5)])
    settings = {"prompt_field": "question", "answer_field": "solution", "verify_timeout": 30.0,
                "eval_data": {"aime": str(aime)}}
    config = _config(tmp_path / "c.yaml", tmp_path / "ds", settings)
    err = _train_error(capsys, "--config", str(config), "--output", str(tmp_path / "run"))
    assert "no data file of split 'train'" in err, err
    item = _set_item(err).replace("NAME", "test")
    got = _train_settings("--config", str(config), "--set", item)
    assert {k: got.get(k) for k in settings} == settings, (item, got)


def test_eval_file_rows_under_several_keys_advice_keeps_the_set(tmp_path, capsys):
    """An evaluation JSON file {easy: [...], hard: [...]}: the advice --set 'task.settings={split: KEY}' pasted after
    --config drops eval_data (the set is no longer evaluated, unsaid) and val_fraction, and names the training
    data's split, not the set's."""
    from scalerl.tasks.registry import get_task

    train = _rows_file(tmp_path / "t.jsonl", [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(60)])
    aime = tmp_path / "aime.json"
    aime.write_text(json.dumps({"easy": [{"prompt": f"{i}*3?", "answer": str(3 * i)} for i in range(4)],
                                "hard": [{"prompt": f"{i}*13?", "answer": str(13 * i)} for i in range(4)]}))
    config = _config(tmp_path / "c.yaml", train, {"val_fraction": 0.2, "eval_data": {"aime": str(aime)}})
    err = _train_error(capsys, "--config", str(config), "--output", str(tmp_path / "run"))
    assert "rows under several keys" in err, err
    item = _set_item(err).replace("KEY", "hard").replace("NAME", "hard")
    got = _train_settings("--config", str(config), "--set", item)
    assert got.get("val_fraction") == 0.2 and got.get("split", "train") == "train", (item, got)
    task = get_task("math", settings={**got, "data": str(train)})
    assert [p.prompt for p in task.eval_sets().get("aime", [])] == ["0*13?", "1*13?", "2*13?", "3*13?"], item


def test_too_few_rows_advice_keeps_the_configs_settings(tmp_path, capsys):
    """A small training file under a config naming its fields: the advice --set 'task.settings={eval_data: {val: FILE}}'
    pasted drops prompt_field, answer_field and verify_timeout."""
    train = _rows_file(tmp_path / "t.jsonl", [{"question": f"{i}+1?", "solution": str(i + 1)} for i in range(5)])
    val = _rows_file(tmp_path / "val.jsonl", [{"question": f"{i}+2?", "solution": str(i + 2)} for i in range(3)])
    settings = {"prompt_field": "question", "answer_field": "solution", "verify_timeout": 30.0, "val_fraction": 0.01}
    config = _config(tmp_path / "c.yaml", train, settings)
    err = _train_error(capsys, "--config", str(config), "--output", str(tmp_path / "run"))
    assert "too few rows to hold out a val set" in err, err
    item = _set_item(err).replace("FILE", str(val))
    got = _train_settings("--config", str(config), "--set", item)
    kept = {k: v for k, v in settings.items() if k != "val_fraction"}
    assert {k: got.get(k) for k in kept} == kept, (item, got)


@pytest.mark.xfail(strict=True, reason="stated limit: the trainer writes its held-out cap into max_val (held_out_capped), "
                   "which the task cannot tell from a user's: the advice carries it")
def test_advice_does_not_pin_a_max_val_the_user_never_gave(tmp_path, capsys):
    """scalerl train --task math --data FILE (no settings given): the missing-field advice is
    {max_val: 200, prompt_field: NAME}; pasted beside --set eval.problems=500 the val set holds 200 problems, not 500."""
    train = _rows_file(tmp_path / "t.jsonl", [{"question": f"{i}+{i % 7}?", "answer": str(i + i % 7)}
                                              for i in range(200)])
    given = ["--task", "math", "--data", str(train)]
    err = _train_error(capsys, *given, "--output", str(tmp_path / "run"))
    item = _set_item(err).replace("NAME", "question")
    fixed = ["--set", "task.settings={prompt_field: question}", "--set", "eval.problems=500"]
    assert _train_settings(*given, *fixed)["max_val"] == 500  # the user's own fix
    pasted = _train_settings(*given, "--set", item, "--set", "eval.problems=500")
    assert pasted.get("max_val") == 500, (item, pasted)


# ---------------------------------------------------------------------------------------------------------------------
# Part 2: column listings


# ---------------------------------------------------------------------------------------------------------------------
# Review FU: an evaluation file's advice keeps the task's other settings


def test_eval_file_advice_keeps_the_sets_own_split(tmp_path):
    """An evaluation set {data: DIR, split: test} missing a field: the suggested --set leaves out split, so pasted back it
    evaluates the directory's train split."""
    from scalerl.config import apply_overrides
    from scalerl.tasks.math import MathTask
    from scalerl.train.config import TrainConfig

    train = _rows_file(tmp_path / "t.jsonl", [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(20)])
    _rows_file(tmp_path / "gsm" / "train.jsonl", [{"question": f"train {i}?", "answer": str(i)} for i in range(7)])
    _rows_file(tmp_path / "gsm" / "test.jsonl", [{"question": f"test {i}?", "answer": str(i)} for i in range(3)])
    with pytest.raises(InputError) as err:
        MathTask(data=str(train), eval_data={"gsm": {"data": str(tmp_path / "gsm"), "split": "test"}},
                 val_fraction=0).eval_sets()
    item = _set_item(str(err.value), "for this evaluation file alone").replace("NAME", "question")
    settings = apply_overrides(TrainConfig(), [item]).task.settings
    evals = MathTask(**{"data": str(train), **settings}).eval_sets()
    assert [p.prompt for p in evals["gsm"]] == ["test 0?", "test 1?", "test 2?"], item


def test_eval_file_advice_keeps_the_other_evaluation_sets(tmp_path, capsys):
    """scalerl train --set 'task.settings={eval_data: {val: V, aime: A}}', then the suggested --set for aime added as
    told: eval_data becomes {aime: ...} alone -- the val file is dropped without a word (val is then held out of the
    training data)."""
    train = _rows_file(tmp_path / "t.jsonl", [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(40)])
    val = _rows_file(tmp_path / "v.jsonl", [{"prompt": f"{i}+2?", "answer": str(i + 2)} for i in range(5)])
    aime = _rows_file(tmp_path / "aime.jsonl", [{"Problem": f"{i}*3?", "Answer": str(3 * i)} for i in range(5)])
    given = ["--task", "math", "--data", str(train), "--output", str(tmp_path / "run"),
             "--set", f"task.settings={{eval_data: {{val: {val}, aime: {aime}}}}}"]
    err = _train_error(capsys, *given)
    item = _set_item(err, "for this evaluation file alone").replace("NAME", "Problem", 1).replace("NAME", "Answer")
    settings = _train_settings(*given, "--set", item)
    assert settings["eval_data"].get("val") == str(val), settings
    assert settings["eval_data"]["aime"]["prompt_field"] == "Problem", settings


def test_eval_file_advice_with_a_config_keeps_the_training_fields(tmp_path, capsys):
    """--config naming the training data's prompt_field/answer_field: the suggested --set for an evaluation file
    replaces the whole task.settings, so the training data's own field names are lost (what af34428 meant to avoid)."""
    train = _rows_file(tmp_path / "t.jsonl", [{"problem": f"{i}+1?", "solution": str(i + 1)} for i in range(40)])
    aime = _rows_file(tmp_path / "aime.jsonl", [{"Problem": f"{i}*3?", "Answer": str(3 * i)} for i in range(5)])
    config = tmp_path / "c.yaml"
    config.write_text(f"task:\n  name: math\n  data: {train}\n  settings: {{prompt_field: problem, "
                      f"answer_field: solution, eval_data: {{aime: {aime}}}}}\n")
    err = _train_error(capsys, "--config", str(config), "--output", str(tmp_path / "run"))
    item = _set_item(err, "for this evaluation file alone").replace("NAME", "Answer")
    settings = _train_settings("--config", str(config), "--set", item)
    assert (settings.get("prompt_field"), settings.get("answer_field")) == ("problem", "solution"), settings


def test_eval_file_object_field_advice_leaves_the_training_data_alone(tmp_path):
    """An evaluation file whose 'prompt' is an object {text: ...}: the advice is --set 'task.settings={prompt_field:
    prompt.text}', the training data's setting -- pasted, the training data (plain 'prompt') no longer reads."""
    from scalerl.config import apply_overrides
    from scalerl.tasks.math import MathTask
    from scalerl.train.config import TrainConfig

    train = _rows_file(tmp_path / "t.jsonl", [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(20)])
    aime = _rows_file(tmp_path / "aime.jsonl", [{"prompt": {"text": f"{i}*3?"}, "answer": str(3 * i)} for i in range(3)])
    given = f"task.settings={{eval_data: {{aime: {aime}}}, val_fraction: 0}}"
    with pytest.raises(InputError) as err:
        MathTask(data=str(train), eval_data={"aime": str(aime)}, val_fraction=0).eval_sets()
    settings = apply_overrides(TrainConfig(), [given, _set_item(str(err.value))]).task.settings
    evals = MathTask(**{"data": str(train), **settings}).eval_sets()  # (the training data is read first)
    assert [p.prompt for p in evals["aime"]] == ["0*3?", "1*3?", "2*3?"]


def test_eval_file_sft_conversation_advice_leaves_the_training_data_alone(tmp_path):
    """An evaluation file whose 'prompt' conversation ends with the solution: the advice --set 'task.settings=
    {prompt_field: NAME}' (NAME: the 'q' it names) renames the training data's field too -- it no longer reads."""
    from scalerl.config import apply_overrides
    from scalerl.tasks.math import MathTask
    from scalerl.train.config import TrainConfig

    train = _rows_file(tmp_path / "t.jsonl", [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(20)])
    aime = _rows_file(tmp_path / "aime.jsonl", [{"prompt": [{"role": "user", "content": f"{i}*3?"},
                                                        {"role": "assistant", "content": str(3 * i)}],
                                             "q": f"{i}*3?", "answer": str(3 * i)} for i in range(3)])
    given = f"task.settings={{eval_data: {{aime: {aime}}}, val_fraction: 0}}"
    with pytest.raises(InputError) as err:
        MathTask(data=str(train), eval_data={"aime": str(aime)}, val_fraction=0).eval_sets()
    assert "'q'" in str(err.value), err.value
    item = _set_item(str(err.value)).replace("NAME", "q")
    settings = apply_overrides(TrainConfig(), [given, item]).task.settings
    evals = MathTask(**{"data": str(train), **settings}).eval_sets()
    assert [p.prompt for p in evals["aime"]] == ["0*3?", "1*3?", "2*3?"]


def test_eval_data_file_advice_leaves_the_runs_other_sets_alone(tmp_path):
    """scalerl eval --run RUN --data FILE (FILE: Problem/Answer; the run's set 'hard': prompt/answer): FILE's advice,
    task.settings' prompt_field (then answer_field), renames the fields of the run's set too -- hard.jsonl then fails."""
    import argparse

    from scalerl.commands.evaluate import _eval_task

    train = _rows_file(tmp_path / "train.jsonl", [{"prompt": f"{a}+1=", "answer": str(a + 1)} for a in range(40)])
    hard = _rows_file(tmp_path / "hard.jsonl", [{"prompt": f"{a}+9=", "answer": str(a + 9)} for a in range(5)])
    test = _rows_file(tmp_path / "test.jsonl", [{"Problem": f"{a}+3=", "Answer": str(a + 3)} for a in range(7)])
    # What _run_settings reads from such a run's config.yaml, and the flags of `eval --run RUN --data test.jsonl`.
    base = {"task": "math", "data": str(train), "reward": None,
            "task_settings": {"data": str(train), "eval_data": {"hard": str(hard)}}}

    def evaluate(overrides):
        task = _eval_task(argparse.Namespace(data=str(test), overrides=overrides, reward_workers=None),
                          {"task": "math", "data": str(test), "reward": None}, base)
        try:
            return task.eval_sets()
        finally:
            task.close()

    overrides: list[str] = []
    for _ in range(3):  # each advice followed as given (NAME: FILE's 'Problem'), as a user would
        try:
            sets = evaluate(overrides)
            break
        except InputError as exc:
            overrides.append(_set_item(str(exc)).replace("NAME", "Problem"))
    assert {name: len(problems) for name, problems in sets.items()} == {"val": 7, "hard": 5}


def test_settings_advice_reads_back_every_kind_of_setting():
    """flow_mapping: the settings an advice carries read back through --set as they are -- a float YAML would read as
    text without its point (1e-05), text YAML would read as another type ('yes', 'null', '1e3'), nested mappings."""
    from scalerl.config import override_value
    from scalerl.tasks.datasets import flow_mapping

    settings = {"val_fraction": 1e-05, "big": 1e20, "neg": -2e-7, "inf": float("inf"), "n": 3, "flag": True,
                "salt": "yes", "none": "null", "e": "1e3", "t": 15.0,
                "eval_data": {"aime, 2024": {"data": "a: b #c.jsonl", "split": None}}}
    assert override_value(flow_mapping(settings)) == settings


# ---------------------------------------------------------------------------------------------------------------------
# Review FX: a config's data, scalerl eval --data with val_fraction 0


def test_advice_keeps_the_data_a_config_gives_in_task_settings(tmp_path, capsys):
    """A config with task.settings.data (no task.data): the missing-split advice pasted after --config drops data."""
    import yaml

    from scalerl.tasks.registry import get_task

    train = tmp_path / "t.json"
    train.write_text(json.dumps({"easy": [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(60)],
                                 "hard": [{"prompt": f"{i}*3?", "answer": str(3 * i)} for i in range(60)]}))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"task": {"name": "math", "settings": {"data": str(train), "val_fraction": 0.2}}}))
    err = _train_error(capsys, "--config", str(config), "--output", str(tmp_path / "run"))
    assert "rows under several keys" in err, err
    item = _set_item(err).replace("NAME", "hard")
    got = _train_settings("--config", str(config), "--set", item)
    assert got.get("data") == str(train), (item, got)
    assert get_task("math", settings=got).train_problems()[0].prompt.endswith("*3?")


def test_eval_data_file_with_val_fraction_0_is_not_refused(tmp_path):
    """scalerl eval --data FILE --set 'task.settings={val_fraction: 0}': refused for 'no evaluation set'."""
    from scalerl.tasks.registry import get_task

    test = _rows_file(tmp_path / "test.jsonl", [{"prompt": f"{i}+5?", "answer": str(i + 5)} for i in range(8)])
    task = get_task("math", settings={"data": str(test), "evaluate_only": True, "val_fraction": 0})
    assert len(task.eval_sets()["val"]) == 8


# ---------------------------------------------------------------------------------------------------------------------
# Review FZ: the data an advice names, in eval and against a config's task.data


def _math_run(tmp_path, train, eval_data=None):
    """A run directory as ``scalerl train --task math --data TRAIN`` leaves it, as far as ``eval --run`` reads it."""
    import yaml

    from scalerl.config import to_dict
    from scalerl.train.config import TrainConfig

    run = tmp_path / "run"
    (run / "final").mkdir(parents=True)
    cfg = TrainConfig()
    cfg.task.name = "math"
    cfg.task.data = str(train)
    cfg.eval.problems = 5
    cfg.task.settings = {"max_val": 5, **({"eval_data": eval_data} if eval_data else {})}
    cfg.recipe.length.max_new_tokens = 8
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg)))
    return run


def _eval_task_of(*argv: str):
    """The task ``scalerl eval ARGV`` evaluates (its flags resolved as the command resolves them)."""
    from scalerl.commands.evaluate import _chosen_settings, _eval_task, add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(list(argv))
    pick, base, _ = _chosen_settings(args)
    return _eval_task(args, pick, base)


def test_eval_data_advice_leaves_the_data_to_the_data_flag(tmp_path):
    """eval --run RUN --data DIR (no train split): the advice names no data -- pasted without --data, an advice that
    named DIR scored the run's own held-out val, DIR unread (review FZ) --, and with --data it reads DIR's split."""
    train = _rows_file(tmp_path / "train.jsonl", [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(100)])
    _rows_file(tmp_path / "ds" / "test.jsonl", [{"prompt": f"{i}+7?", "answer": str(i + 7)} for i in range(9)])
    run = _math_run(tmp_path, train)
    ds = str(tmp_path / "ds")
    task = _eval_task_of("--run", str(run), "--data", ds)
    with pytest.raises(InputError) as err:  # no train split: the advice gives split: NAME
        task.eval_sets()
    task.close()
    item = _set_item(str(err.value)).replace("NAME", "test")
    assert "data: " not in item.split("eval_data")[0] and ds not in item, item
    task = _eval_task_of("--run", str(run), "--data", ds, "--set", item)
    try:
        assert [p.prompt for p in task.eval_sets()["val"]] == [f"{i}+7?" for i in range(9)]
    finally:
        task.close()


def test_train_set_task_settings_data_is_read_over_the_configs_task_data(tmp_path, capsys):
    """--config (task.data A) --set 'task.settings={data: B}': A is read without a word (here its error), B never."""
    import yaml

    from scalerl.cli import main

    a = tmp_path / "a.json"  # rows under two keys: reading it stops, naming a.json
    a.write_text(json.dumps({"easy": [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(60)],
                             "hard": [{"prompt": f"{i}*3?", "answer": str(3 * i)} for i in range(60)]}))
    b = _rows_file(tmp_path / "b.jsonl", [{"question": f"{i}+2?", "answer": str(i + 2)} for i in range(60)])
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"task": {"name": "math", "data": str(a)}}))
    capsys.readouterr()
    rc = main(["train", "--config", str(config), "--output", str(tmp_path / "run"),
               "--set", f"task.settings={{data: {b}}}"])
    err = capsys.readouterr().err
    assert rc != 0
    # B read (its own error: no 'prompt' field), or said to be left unread -- not a.json's error alone.
    assert str(b) in err, err


# ---------------------------------------------------------------------------------------------------------------------
# Review GB: a split advice keeps the run's sets at theirs; --set task.data; the same file named two ways


def _print_config(*args: str) -> tuple[dict, str]:
    """(the config ``scalerl train ARGS --print-config`` prints, its stderr)."""
    import yaml

    from scalerl.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["train", *args, "--print-config"]) == 0, err.getvalue()
    return yaml.safe_load(out.getvalue()), err.getvalue()


def _split_dataset_run(tmp_path):
    """A math run whose evaluation set ``hard`` is a directory of split files, read (as trained) at ``train``."""
    train = _rows_file(tmp_path / "train.jsonl", [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(100)])
    _rows_file(tmp_path / "hard" / "train.jsonl", [{"prompt": f"{i}*9?", "answer": str(9 * i)} for i in range(5)])
    _rows_file(tmp_path / "hard" / "test.jsonl", [{"prompt": f"{i}*11?", "answer": str(11 * i)} for i in range(5)])
    return _math_run(tmp_path, train, {"hard": str(tmp_path / "hard")})


def test_eval_data_missing_split_advice_keeps_the_runs_eval_sets_at_their_split(tmp_path):
    """eval --run RUN --data DIR (test split only): the advice's split: test, pasted, scores hard/test as the run's hard."""
    run = _split_dataset_run(tmp_path)
    _rows_file(tmp_path / "ds" / "test.jsonl", [{"prompt": f"{i}+7?", "answer": str(i + 7)} for i in range(9)])
    ds = str(tmp_path / "ds")
    task = _eval_task_of("--run", str(run), "--data", ds)
    with pytest.raises(InputError) as err:
        task.eval_sets()
    task.close()
    item = _set_item(str(err.value)).replace("NAME", "test")
    task = _eval_task_of("--run", str(run), "--data", ds, "--set", item)
    try:
        sets = task.eval_sets()
        assert [p.prompt for p in sets["val"]] == [f"{i}+7?" for i in range(9)]
        assert [p.prompt for p in sets["hard"]] == [f"{i}*9?" for i in range(5)], (item, sets["hard"][:2])
    finally:
        task.close()


def test_eval_data_other_split_note_keeps_the_runs_eval_sets_at_their_split(tmp_path, capsys):
    """eval --run RUN --data DIR (train and test): the note's split: test, pasted, scores hard/test as the run's hard."""
    run = _split_dataset_run(tmp_path)
    _rows_file(tmp_path / "ds" / "train.jsonl", [{"prompt": f"{i}+8?", "answer": str(i + 8)} for i in range(9)])
    _rows_file(tmp_path / "ds" / "test.jsonl", [{"prompt": f"{i}+6?", "answer": str(i + 6)} for i in range(9)])
    ds = str(tmp_path / "ds")
    capsys.readouterr()
    _eval_task_of("--run", str(run), "--data", ds).close()
    item = _set_item(capsys.readouterr().err)
    task = _eval_task_of("--run", str(run), "--data", ds, "--set", item)
    try:
        sets = task.eval_sets()
        assert [p.prompt for p in sets["val"]] == [f"{i}+6?" for i in range(9)]
        assert [p.prompt for p in sets["hard"]] == [f"{i}*9?" for i in range(5)], (item, sets["hard"][:2])
    finally:
        task.close()


# ---------------------------------------------------------------------------------------------------------------------
# scalerl train: --set task.settings={data: B} against task.data


def test_train_set_task_data_wins_over_set_task_settings_data(tmp_path, monkeypatch):
    """--task math --set task.data=X --set 'task.settings={data: B}': B is read, not X as --data X would be."""
    monkeypatch.chdir(tmp_path)
    rows = [{"prompt": f"{i}+1?", "answer": str(i + 1)} for i in range(60)]
    x, b = _rows_file(tmp_path / "x.jsonl", rows), _rows_file(tmp_path / "b.jsonl", rows)
    by_flag, _ = _print_config("--task", "math", "--data", str(x), "--set", f"task.settings={{data: {b}}}")
    assert by_flag["task"]["data"] == str(x)  # --data wins over task.settings' data
    cfg, err = _print_config("--task", "math", "--set", f"task.data={x}", "--set", f"task.settings={{data: {b}}}")
    assert "config file" not in err, err
    assert cfg["task"]["data"] == str(x), cfg["task"]


def test_train_advice_naming_the_configs_own_data_is_the_same_data(tmp_path, monkeypatch, capsys):
    """--config (task.data: train.jsonl, relative) + the advice it printed (data: /abs/train.jsonl): a note says the
    config's train.jsonl is not read -- the same file."""
    import yaml

    from scalerl.cli import main

    monkeypatch.chdir(tmp_path)
    _rows_file(tmp_path / "train.jsonl", [{"question": f"{i}+1?", "answer": str(i + 1)} for i in range(60)])
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"task": {"name": "math", "data": "train.jsonl", "settings": {"verify_timeout": 30}}}))
    capsys.readouterr()
    assert main(["train", "--config", "c.yaml", "--output", str(tmp_path / "run")]) != 0
    item = _set_item(capsys.readouterr().err).replace("NAME", "question")
    assert str(tmp_path / "train.jsonl") in item, item  # the advice names the config's data, made absolute
    cfg, err = _print_config("--config", "c.yaml", "--set", item)
    assert "not the config file's task.data" not in err, err


# ---------------------------------------------------------------------------------------------------------------------
# Column listing: 'time out' as two words


def test_train_advice_naming_a_symlinked_configs_data_is_the_same_data(tmp_path, monkeypatch, capsys):
    """--config (task.data: data/train.jsonl, a symlink) + its own advice pasted: a note says that data is not read."""
    import yaml

    from scalerl.cli import main

    monkeypatch.chdir(tmp_path)
    real = tmp_path / "store" / "train.jsonl"
    real.parent.mkdir()
    real.write_text("".join(json.dumps({"question": f"{i}+1?", "answer": str(i + 1)}) + "\n" for i in range(60)))
    (tmp_path / "data").mkdir()
    os.symlink(real, tmp_path / "data" / "train.jsonl")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(
        {"task": {"name": "math", "data": "data/train.jsonl", "settings": {"verify_timeout": 30}}}))
    capsys.readouterr()
    assert main(["train", "--config", "c.yaml", "--output", str(tmp_path / "run")]) != 0
    item = _set_item(capsys.readouterr().err).replace("NAME", "question")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["train", "--config", "c.yaml", "--set", item, "--print-config"]) == 0, err.getvalue()
    assert "not the config file's task.data" not in err.getvalue(), (item, err.getvalue())
