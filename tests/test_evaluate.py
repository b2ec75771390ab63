import argparse
import json
import shutil

import pytest
import yaml

from scalerl.generate.base import SamplingParams
from scalerl.tasks.arithmetic import ArithmeticTask
from scalerl.tasks.base import Problem
from scalerl.train.evaluate import evaluate

from scripted import ScriptedGenerator


class ByteTokenizer:
    """Encodes a prompt as its character codes, so the fake generator can read it back."""

    chat_template = None

    def __call__(self, text):
        class Out:
            input_ids = [ord(c) for c in text]

        return Out()

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(i) for i in ids)


def problems():
    return [Problem(id=f"{a}+{a}", prompt=f"{a}+{a}=", answer=str(2 * a), meta={"a": a, "b": a}) for a in (1, 2, 3)]


def script(prompt_ids, index):
    """Problem 1: right on samples 0-2 of 4; problem 2: always right but truncated once; problem 3: never."""
    a = int(chr(prompt_ids[0]))
    if a == 1:
        return ("<think>1+1</think>2", "stop") if index < 3 else ("<think>x</think>7", "stop")
    if a == 2:
        return ("<think>2+2</think>4", "stop") if index else ("<think>Okay, time is up. </think>4", "interrupted_stop")
    return "<think>3+3=6", "length"


def test_mean_at_k_and_pass_at_k_from_a_scripted_generator():
    gen = ScriptedGenerator(script)
    m = evaluate(gen, ByteTokenizer(), ArithmeticTask(), problems(), k=4, params=SamplingParams())
    assert m["pass_rate"] == pytest.approx((3 / 4 + 4 / 4 + 0) / 3)
    assert m["pass_at_k"] == pytest.approx(2 / 3)
    assert m["samples"] == 12 and m["problems"] == 3 and m["k"] == 4
    assert m["frac_interrupted"] == pytest.approx(1 / 12)
    assert m["frac_truncated"] == pytest.approx(4 / 12)
    lengths = [19] * 3 + [17] + [34] + [19] * 3 + [len("<think>3+3=6")] * 4
    assert m["mean_len"] == pytest.approx(sum(lengths) / 12)
    assert m["tokens"] == sum(lengths)
    assert m["mean_reward"] == pytest.approx((3 - 1 + 4 - 4) / 12)


def test_batch_size_splits_generate_calls():
    gen = ScriptedGenerator(lambda p, i: ("<think></think>0", "stop"))
    evaluate(gen, ByteTokenizer(), ArithmeticTask(), problems(), k=4, params=SamplingParams(seed=3), batch_size=5)
    assert gen.calls == [5, 5, 2]


def test_greedy_decodes_each_problem_once_and_counts_it_k_times():
    """Temperature 0 with k > 1 decoded (and scored) each problem k times for one completion
    repeated: k times the work, and the compute meter's eval tokens k times what a greedy
    evaluation costs. Now one draw per problem, counted k times in mean@k, pass@k and the lengths."""
    gen = ScriptedGenerator(script)
    bar = []
    m = evaluate(gen, ByteTokenizer(), ArithmeticTask(), problems(), k=4, params=SamplingParams(temperature=0.0),
                 batch_size=2, progress=bar.append)
    assert sum(gen.calls) == 3 and sum(bar) == 12  # (the bar still counts the k samples a problem is worth)
    assert m["samples"] == 12 and m["k"] == 4 and m["problems"] == 3
    assert m["pass_rate"] == pytest.approx(2 / 3) and m["pass_at_k"] == pytest.approx(2 / 3)
    assert m["tokens"] == 19 + 34 + len("<think>3+3=6")  # decoded once each
    assert m["mean_len"] == pytest.approx((19 + 34 + len("<think>3+3=6")) / 3)
    assert m["frac_interrupted"] == pytest.approx(1 / 3)


def test_bad_arguments():
    gen = ScriptedGenerator(lambda p, i: ("", "stop"))
    with pytest.raises(ValueError, match="k must be"):
        evaluate(gen, ByteTokenizer(), ArithmeticTask(), problems(), k=0, params=SamplingParams())
    with pytest.raises(ValueError, match="no problems"):
        evaluate(gen, ByteTokenizer(), ArithmeticTask(), [], k=1, params=SamplingParams())


def test_pass_rate_standard_error_takes_problems_as_the_unit():
    """mean@k's standard error is over problems (sd of the per-problem pass rates / sqrt(n)), not
    over the n*k samples: the k samples of one problem are not independent draws of the rate."""
    gen = ScriptedGenerator(script)
    m = evaluate(gen, ByteTokenizer(), ArithmeticTask(), problems(), k=4, params=SamplingParams())
    rates = [3 / 4, 1.0, 0.0]
    mean = sum(rates) / 3
    assert m["pass_rate_se"] == pytest.approx((sum((r - mean) ** 2 for r in rates) / 2 / 3) ** 0.5)
    one = evaluate(ScriptedGenerator(script), ByteTokenizer(), ArithmeticTask(), problems()[:1], k=4,
                   params=SamplingParams())
    assert one["pass_rate_se"] is None  # (no spread to measure with one problem)


def test_eval_command_greedy_repeated_sets_short_sets_and_json(warm_tiny_dir, capsys):
    """Temperature 0 with k > 1 repeated one greedy completion k times without a word; a set named
    twice was evaluated twice; --problems above a set's size was cut silently; --json had no
    standard error nor temperature."""
    import json

    from scalerl.cli import main

    common = ["eval", "--model", str(warm_tiny_dir), "--max-new-tokens", "8", "--sets", "val", "val"]
    assert main([*common, "--k", "2", "--problems", "2", "--temperature", "0"]) == 0
    out, err = capsys.readouterr()
    assert "temperature 0 is greedy decoding: each problem is decoded once and counted 2 times" in err
    assert "(greedy)" in out and out.count("  val ") == 1 and " ± " in out
    assert main([*common, "--k", "1", "--problems", "100000", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "note: set val has" in err and "fewer than --problems 100000" in err and "greedy" not in err
    row = json.loads(out)
    assert row["temperature"] == 1.0 and list(row["sets"]) == ["val"]
    assert row["sets"]["val"]["pass_rate_se"] >= 0


def test_eval_of_a_data_file_evaluates_every_row_with_its_own_fields(warm_tiny_dir, tmp_path, capsys):
    """``scalerl eval --task math --data FILE`` evaluated the ~5% share a training run would hold out
    (a 3-row file: "too few rows to hold out a val set"), and the missing-field error told the user to
    --set task.settings, which eval did not take. Now the file is the val set, every row of it, and
    --set task.settings names its fields."""
    import json

    from scalerl.cli import main

    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {i}+1?", "solution": str(i + 1)}) + "\n" for i in range(3)))
    common = ["eval", "--model", str(warm_tiny_dir), "--task", "math", "--data", str(data), "--k", "1",
              "--max-new-tokens", "8", "--json"]
    assert main(common) == 2
    assert "missing field 'prompt'" in capsys.readouterr().err
    assert main([*common, "--set", "task.settings={prompt_field: question, answer_field: solution}"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sets"]["val"]["problems"] == 3
    assert main([*common, "--set", "model.name_or_path=x"]) == 2
    assert "eval takes task.settings={KEY: VALUE, ...}, task.reward_timeout=SECONDS, task.reward_load_timeout=SECONDS only" in capsys.readouterr().err


def test_eval_shows_a_progress_bar_per_set_unless_told_not_to(warm_tiny_dir, capsys):
    """An evaluation with a large --k ran for minutes without a word (the trainer's evaluations have
    a bar); --no-progress turns it off, as train's does."""
    from scalerl.cli import main

    common = ["eval", "--model", str(warm_tiny_dir), "--max-new-tokens", "4", "--k", "1", "--problems", "2",
              "--sets", "val"]
    assert main(common) == 0
    assert "eval val" in capsys.readouterr().err
    assert main([*common, "--no-progress"]) == 0
    assert "eval val" not in capsys.readouterr().err


def test_eval_of_a_runs_final_model_evaluates_it_as_the_run_did(warm_tiny_dir, tmp_path, capsys):
    """``scalerl eval --model RUN/final`` took eval's own defaults, not the run's: a math run's model was
    scored on the arithmetic task (its data unread), with k 4 and other sets and seeds than the run's,
    while ``--run RUN`` evaluated it as the run did. Now both read the run's settings."""
    import json
    import shutil

    import yaml

    from scalerl.cli import main
    from scalerl.config import to_dict
    from scalerl.train.config import TrainConfig

    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {i}+1?", "solution": str(i + 1)}) + "\n" for i in range(3)))
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"question": f"What is {i}+2?", "solution": str(i + 2)}) + "\n" for i in range(3)))
    run = tmp_path / "run"
    shutil.copytree(warm_tiny_dir, run / "final")
    cfg = TrainConfig()
    cfg.task.name, cfg.task.data = "math", str(train)
    cfg.task.settings = {"prompt_field": "question", "answer_field": "solution", "eval_data": {"val": str(data)},
                         "val_fraction": 0.0}
    cfg.eval.samples_per_problem, cfg.eval.temperature, cfg.eval.sets = 2, 0.5, ["val"]
    cfg.recipe.length.max_new_tokens = 8
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg)))
    results = []
    for how in (["--run", str(run)], ["--model", str(run / "final")]):
        assert main(["eval", *how, "--json", "--no-progress"]) == 0
        out, err = capsys.readouterr()
        results.append(json.loads(out))
        assert ("is the final model of the run" in err) == (how[0] == "--model")
    assert results[0] == results[1]
    assert (results[1]["task"], results[1]["k"], results[1]["temperature"], list(results[1]["sets"])) == ("math", 2, 0.5, ["val"])
    assert main(["eval", "--model", str(run / "final"), "--task", "arithmetic", "--k", "1", "--json", "--no-progress",
                 "--max-new-tokens", "8"]) == 0  # a flag still wins over the run's setting
    assert json.loads(capsys.readouterr().out)["task"] == "arithmetic"


def test_eval_says_when_a_reference_cannot_be_matched(warm_tiny_dir, tmp_path, capsys):
    """A reference math-verify reads as nothing scores every completion -1: eval says so before it runs."""
    import json

    from scalerl.cli import main

    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"What is {i}+1?", "answer": str(i + 1) if i else "$"}) + "\n"
                            for i in range(3)))
    assert main(["eval", "--model", str(warm_tiny_dir), "--task", "math", "--data", str(data), "--k", "1",
                 "--max-new-tokens", "4", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "warning: math task, evaluation set 'val': 1 of the first 3 reference answers cannot be matched" in err


@pytest.mark.parametrize("workers", [1, 3])
def test_a_shown_completion_whose_reward_call_failed_is_marked_and_still_counted(tmp_path, workers):
    """samples.jsonl's completions said reward -1 where the reward function had raised: read as a plain
    wrong answer. Each shown completion now says whether its call failed; the evaluation's failure
    counts still hold every failed call, the shown ones included -- also where the shown ones are scored
    beside the batch, on several workers (review ab: they were scored one after another before it)."""
    from scalerl.tasks.failure_tally import counting_failures
    from scalerl.tasks.registry import get_task

    (tmp_path / "judge.py").write_text(
        "def score(completion, answer):\n"
        "    if 'x' in completion:\n"
        "        raise ValueError('cannot judge')\n"
        "    return completion.endswith(answer)\n")
    task = get_task("arithmetic", reward=f"{tmp_path / 'judge.py'}:score", reward_workers=workers)
    examples = []
    try:
        with counting_failures() as failures:
            m = evaluate(ScriptedGenerator(script), ByteTokenizer(), task, problems(), k=4, params=SamplingParams(),
                         examples=examples, n_examples=3)
    finally:
        task.close()
    # problem 1's sample 3 ('x') raised: 1 failure; it is not among the shown (each problem's first sample)
    assert failures.as_dict() == {"errors": 1, "timeouts": 0}
    assert [e["reward_failed"] for e in examples] == [False, False, False]
    assert m["pass_rate"] == pytest.approx((3 / 4 + 4 / 4 + 4 / 4) / 3)  # (this judge: the answer at the end)

    def first_fails(prompt_ids, index):
        text, finish = script(prompt_ids, index)
        return ("<think>x</think>2", "stop") if chr(prompt_ids[0]) == "1" and index == 0 else (text, finish)

    task = get_task("arithmetic", reward=f"{tmp_path / 'judge.py'}:score", reward_workers=workers)
    examples = []
    try:
        with counting_failures() as failures:
            evaluate(ScriptedGenerator(first_fails), ByteTokenizer(), task, problems(), k=4, params=SamplingParams(),
                     examples=examples, n_examples=3)
    finally:
        task.close()
    assert failures.as_dict() == {"errors": 2, "timeouts": 0}  # the shown one and problem 1's sample 3
    assert [(e["reward"], e["reward_failed"]) for e in examples] == [(-1.0, True), (1.0, False), (1.0, False)]


# ------------------------------------------------------------------------------------- review da


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, random_model, char_tokenizer):
    """A freshly initialised tiny model saved as a Hugging Face directory (no warm start: fast)."""
    path = tmp_path_factory.mktemp("da-model")
    random_model.save_pretrained(path)
    char_tokenizer.save_pretrained(path)
    return path


def _run_dir(tmp_path, model_dir, **eval_settings):
    """A run directory as ``scalerl train`` leaves it, as far as ``eval --run`` reads it: config.yaml and final/."""
    from scalerl.config import to_dict
    from scalerl.train.config import TrainConfig

    run = tmp_path / "run"
    shutil.copytree(model_dir, run / "final")
    cfg = TrainConfig()
    for key, value in eval_settings.items():
        setattr(cfg.eval, key, value)
    cfg.recipe.length.max_new_tokens = 8
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg)))
    return run


def test_greedy_mean_at_k_under_a_drawn_thinking_budget_is_k_decodes(random_model, char_tokenizer):
    """``eval --run D --temperature 0 --k 2`` on a tiny run (think_budget [18, 26]) said mean@2 0.850 = pass@2 0.850,
    frac_interrupted 0.0, while --temperature 1e-6 (the same argmax tokens) gave mean@2 0.725, pass@2 0.850,
    frac_interrupted 0.15: the 'one completion however often it is drawn' shortcut does not hold where the length
    control draws a budget per sequence. Two greedy samples of each problem are the same rows as one sample of each
    problem listed twice."""
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.rl.length import length_controller
    from scalerl.rl.recipe import LengthConfig
    from scalerl.tasks.arithmetic import ArithmeticTask
    from scalerl.train.evaluate import evaluate

    task = ArithmeticTask()
    problems = list(task.eval_sets()["val"])[:6]
    control = length_controller(LengthConfig(mode="interrupt", max_new_tokens=48, think_budget=(2, 20), answer_budget=8),
                                char_tokenizer)
    gen = HFGenerator(random_model, char_tokenizer, seed=0)
    greedy = SamplingParams(max_new_tokens=48, temperature=0.0, seed=5)
    k2 = evaluate(gen, char_tokenizer, task, problems, 2, greedy, control)
    twice = evaluate(gen, char_tokenizer, task, [p for p in problems for _ in range(2)], 1, greedy, control)
    for key in ("pass_rate", "mean_reward", "mean_len", "frac_interrupted", "frac_truncated"):
        assert k2[key] == pytest.approx(twice[key]), key


def test_a_tiny_temperature_is_not_reported_as_diverged_weights(model_dir, capsys):
    """``--temperature 1e-30`` samples (as near-greedy), ``1e-38`` / ``1e-45`` / ``5e-324`` stop, blaming the model.
    Passes --temperature's check (finite, >= 0). Expected: evaluated (as greedy, or computed stably), or refused in
    one line naming --temperature -- never a diagnosis of diverged weights."""
    from scalerl.cli import main

    rc = main(["eval", "--model", str(model_dir), "--temperature", "1e-45", "--k", "1", "--problems", "2",
               "--max-new-tokens", "4", "--sets", "val", "--no-progress", "--json"])
    err = capsys.readouterr().err
    assert "diverged" not in err
    assert rc == 0 or "--temperature" in err


def test_another_task_than_the_runs_defaults_to_that_tasks_sets(model_dir, tmp_path, capsys):
    """``eval --run RUN --task math --data test.jsonl`` of an arithmetic run with eval.sets [hard, val]: refused
    naming 'hard' (and --task arithmetic-mix on a [val] run evaluated val alone, not the task's val/len2/len3/len4).
    Help: '--sets: evaluation sets (default: the run's, or all of the task's)'; the run's set names are its task's."""
    from scalerl.cli import main

    run = _run_dir(tmp_path, model_dir, sets=["hard", "val"], samples_per_problem=1, problems=3)
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"What is {i}+1?", "answer": str(i + 1)}) + "\n" for i in range(3)))
    rc = main(["eval", "--run", str(run), "--task", "math", "--data", str(data), "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    row = json.loads(out)
    assert row["task"] == "math" and list(row["sets"]) == ["val"] and row["sets"]["val"]["problems"] == 3


def test_seed_help_says_the_runs_seeds_are_the_default_with_a_run():
    """The module's docstring: 'unless --seed is given, the run's own evaluation seeds'; the other options' help
    says '(default: the run's, or ...)'. A user who passes --seed 0 to repeat the default gets another evaluation."""
    from scalerl.commands.evaluate import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (seed,) = [a for a in parser._actions if a.dest == "seed"]
    assert "run" in seed.help, seed.help


def test_no_progress_hides_the_tiny_models_warm_start_bar(tmp_path, monkeypatch, capsys, random_model, char_tokenizer):
    """``SCALERL_CACHE=empty scalerl eval --no-progress --json`` printed 'tiny model warm start: ...' for minutes."""
    import scalerl.models.tiny as tiny
    from scalerl.cli import main

    def quick_build(spec, update):
        for _ in range(3):
            update(1)
        return random_model, char_tokenizer, {}

    monkeypatch.setenv("SCALERL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tiny, "make_tiny_model", quick_build)
    rc = main(["eval", "--model", "tiny", "--no-progress", "--k", "1", "--problems", "1", "--max-new-tokens", "4",
               "--sets", "val", "--json"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "tiny model warm start" not in err


def test_math_verify_timeouts_are_reported_by_eval(model_dir, tmp_path, monkeypatch, capsys, caplog):
    """``eval --task math --data F --set 'task.settings={verify_workers: 2, verify_timeout: 0.5}'`` on references such
    as ``99999999!``: one line 'call exceeded 0.5 s; worker killed (... further ones are counted, not logged)', then
    the results with no count of the timeouts anywhere (text or --json)."""
    import scalerl.generate.hf as hf
    from scalerl.cli import main
    from scripted import ScriptedGenerator

    # Every completion answers \boxed{5} (the random model's text has no answer math-verify reads, and no timeout).
    monkeypatch.setattr(hf, "HFGenerator", lambda *a, **kw: ScriptedGenerator(lambda ids, i: ("\\boxed{5}", "stop")))
    data = tmp_path / "fact.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{i}+1=", "answer": "99999999!"}) + "\n" for i in range(3)))
    rc = main(["eval", "--model", str(model_dir), "--task", "math", "--data", str(data), "--k", "1",
               "--max-new-tokens", "8", "--no-progress", "--set", "task.settings={verify_workers: 2, verify_timeout: 0.5}"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "worker killed" in err + caplog.text  # (the calls did time out: the first is logged)
    assert "timeout" in out, out


# ------------------------------------------------------------------------------------- review db


def _run_dir_set(tmp_path, model_dir, *overrides):
    """A run directory of the config ``overrides`` give (written as the trainer writes it), with final/."""
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig, resolve

    run = tmp_path / "run"
    shutil.copytree(model_dir, run / "final")
    save_yaml(resolve(TrainConfig(), [*overrides, f"run.output={run}"]), run / "config.yaml")
    return run


def _eval_json(capsys, argv):
    from scalerl.cli import main

    rc = main(["eval", *argv, "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out), err


def test_eval_run_of_a_run_with_a_negative_eval_temperature_is_greedy(tmp_path, model_dir, capsys):
    """eval.temperature <= 0 is greedy (the config takes -1): ``eval --run`` refused it, blaming a --temperature the
    command was never given."""
    run = _run_dir_set(tmp_path, model_dir, "eval.temperature=-1", "recipe.length.mode=truncate",
                       "recipe.length.max_new_tokens=8", "eval.samples_per_problem=1", "eval.problems=2")
    row, _ = _eval_json(capsys, ["--run", str(run), "--sets", "val"])
    assert row["temperature"] == 0.0 and row["sets"]["val"]["problems"] == 2


def test_eval_max_new_tokens_is_the_budget_under_the_runs_length_control(tmp_path, model_dir, capsys):
    """``--max-new-tokens 20`` on a run of 8 checked 20 positions and decoded 8 tokens a row (the run's length
    controller ended every row at its own budget); the same model without --run decodes 20."""
    run = _run_dir_set(tmp_path, model_dir, "eval.temperature=0", "recipe.length.mode=truncate",
                       "recipe.length.max_new_tokens=8", "eval.samples_per_problem=1", "eval.problems=3")
    plain, _ = _eval_json(capsys, ["--model", str(model_dir), "--temperature", "0", "--k", "1", "--problems", "3",
                                   "--sets", "val", "--max-new-tokens", "20"])
    assert plain["sets"]["val"]["mean_len"] > 8  # (the random model runs past 8 tokens)
    row, _ = _eval_json(capsys, ["--run", str(run), "--sets", "val", "--max-new-tokens", "20"])
    assert row["sets"]["val"]["mean_len"] == pytest.approx(plain["sets"]["val"]["mean_len"])


def test_eval_max_new_tokens_below_the_runs_interrupted_sequence_is_said(tmp_path, model_dir, capsys):
    run = _run_dir_set(tmp_path, model_dir, "eval.temperature=0", "recipe.length.mode=interrupt",
                       "recipe.length.think_budget=[18, 26]", "recipe.length.answer_budget=8",
                       "recipe.length.max_new_tokens=48", "eval.samples_per_problem=1", "eval.problems=2")
    _, err = _eval_json(capsys, ["--run", str(run), "--sets", "val", "--max-new-tokens", "20"])
    assert "--max-new-tokens 20 is less than an interrupted sequence needs" in err, err
    _, err = _eval_json(capsys, ["--run", str(run), "--sets", "val"])
    assert "interrupted sequence needs" not in err, err


def test_eval_run_of_greedy_shard_evaluations_with_drawn_budgets_says_they_can_differ(tmp_path, model_dir, capsys):
    """Each rank of a run.generate_on_shards run draws its rows' thinking budgets from a seed of its own: greedy
    decodes in one process get other budgets, so other pass rates -- said only for temperature > 0 before."""
    run = _run_dir_set(tmp_path, model_dir, "eval.temperature=0", "run.nproc=2", "run.generate_on_shards=true",
                       "recipe.off_policy.pipeline=sync", "recipe.length.mode=interrupt",
                       "recipe.length.think_budget=[18, 26]", "recipe.length.answer_budget=8",
                       "recipe.length.max_new_tokens=48", "eval.samples_per_problem=2", "eval.problems=2")
    _, err = _eval_json(capsys, ["--run", str(run), "--sets", "val"])
    assert "ranks' shards" in err and "thinking budgets" in err and "agree" not in err, err
