"""Property-based fuzzing of `scalerl train` / `eval` / `study` arguments and configs: random
flags and random ``--set key=value`` pairs (keys from the config's own fields, junk values).
Zero tracebacks: every outcome is exit 0 or a one-line error with exit 2 (argparse's own usage
errors, exit 2, included). Runs stop before training (``--print-config``, ``study --dry-run``)
and evaluations are bounded to a couple of completions, so the whole file takes seconds.
"""

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalerl.cli import main
from scalerl.config import leaf_fields
from scalerl.rl.presets import PRESETS
from scalerl.train.config import TrainConfig

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

KEYS = sorted(leaf_fields(TrainConfig))
SHORT_KEYS = sorted({k.rsplit(".", 1)[-1] for k in KEYS})  # leaf aliases (some ambiguous: also an error to say)
JUNK = ["", "0", "1", "-1", "-7", "2", "0.5", "1e-4", "1e309", "-1e309", "nan", "inf", "-inf", "abc", "true", "null",
        "[1, 2]", "[2, 1]", "[]", "{a: 1}", "{}", "[", "{", "]", "'", "\"", "1,2", "x=y", "💥", "cuda", "cpu", "cuda:7",
        "sync", "pipeline-rl-k", "bf16", "fp17", "tiny", "./nope", "/", "token", "prompt", "cispo", "dapo", "auto"]
value = st.one_of(st.sampled_from(JUNK), st.text(alphabet=string.printable, max_size=12))
override = st.builds(lambda k, v: f"{k}={v}", st.one_of(st.sampled_from(KEYS), st.sampled_from(SHORT_KEYS)), value)
integer = st.one_of(st.integers(-3, 5), st.sampled_from([10**12, -(10**12)])).map(str)
RECIPES = [*PRESETS, "scalerl-loo-loss-dapo", "nope", ""]


def _flag(name, values):
    return st.tuples(st.just(name), values).map(list)


TRAIN_FLAGS = st.lists(st.one_of(
    _flag("--set", override),
    _flag("--steps", integer), _flag("--eval-every", integer), _flag("--seed", integer), _flag("--threads", integer),
    _flag("--recipe", st.sampled_from(RECIPES)),
    _flag("--model", st.sampled_from(["tiny", "./no-such-model", "/etc/passwd", "/", "bad id!", ""])),
    _flag("--task", st.sampled_from(["arithmetic", "math", "nope", ""])),
    _flag("--data", st.sampled_from(["missing.jsonl", "x.xlsx", "/", ""])),
    _flag("--reward", st.sampled_from(["x", "a:b", "/nope.py:f", "json:loads", ":"])),
    _flag("--profile", st.sampled_from(["auto", "none", "cpu-tiny", "cpu-small", "gpu-small", "huge"])),
    _flag("--backend", st.sampled_from(["local", "ray", "slurm"])),
    _flag("--config", st.sampled_from(["missing.yaml", "/etc/passwd", "/"])),
), max_size=6).map(lambda groups: [x for g in groups for x in g])


def _outcome(capsys, argv):
    """Run ``scalerl ARGV``; its exit status (argparse's SystemExit included) and stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: usage line + error line, exit 2
        code = exc.code
    return code, capsys.readouterr().err


def _check(code, err, command):
    assert "Traceback" not in err, err
    assert code in (0, 2), (code, err)
    if code == 2:
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1, err  # one line says what is wrong
        assert errors[0].startswith((f"scalerl {command}: error:", f"scalerl {command}: error")), err


@SETTINGS
@given(TRAIN_FLAGS)
def test_train_arguments_never_give_a_traceback(tmp_path_factory, capsys, flags):
    out = tmp_path_factory.mktemp("fuzz-train") / "run"
    code, err = _outcome(capsys, ["train", *flags, "--output", str(out), "--print-config", "--no-progress"])
    _check(code, err, "train")


small = st.integers(-3, 2).map(str)  # bounded: an evaluation draws at most 2 problems x 2 samples


@settings(SETTINGS, max_examples=25)
@given(st.lists(st.one_of(
    _flag("--k", small), _flag("--problems", small), _flag("--max-new-tokens", st.integers(-3, 4).map(str)),
    _flag("--temperature", st.sampled_from(["0", "1", "-1", "nan", "inf", "1e9"])),
    _flag("--sets", st.sampled_from(["val", "hard", "nope"])),
    _flag("--task", st.sampled_from(["arithmetic", "math", "nope"])),
    _flag("--run", st.sampled_from(["/no/such/run", "/", "."])),
    _flag("--reward", st.sampled_from(["x", "a:b", "/nope.py:f"])),
    _flag("--model", st.sampled_from(["tiny", "./no-such-model", "/"])),
), max_size=4).map(lambda groups: [x for g in groups for x in g]))
def test_eval_arguments_never_give_a_traceback(tiny_dir, capsys, flags):
    code, err = _outcome(capsys, ["eval", "--problems", "1", "--k", "1", "--max-new-tokens", "4", *flags])
    _check(code, err, "eval")


@settings(SETTINGS, max_examples=40)
@given(st.lists(st.one_of(
    _flag("--family", st.sampled_from(["loo", "recipes", "batch-size", "gen-length", "model-size", "nope", ""])),
    _flag("--base", st.sampled_from(RECIPES)),
    _flag("--values", st.lists(st.sampled_from(["8", "16", "0", "-1", "abc", "tiny", "tiny-s"]), min_size=1,
                               max_size=3).map(lambda v: " ".join(v))),
    _flag("--only", st.sampled_from(["loss-dapo", "nope"])),
    _flag("--seeds", integer), _flag("--steps", integer), _flag("--eval-every", integer),
    _flag("--max-steps", integer), _flag("--compute", st.sampled_from(["1e13", "0", "-1", "nan"])),
    _flag("--x", st.sampled_from(["flops", "step", "nope"])),
    _flag("--rule", st.sampled_from(["intervals", "paper", "nope"])),
    _flag("--bootstrap", integer), _flag("--extrapolate", st.sampled_from(["10", "0", "-1", "nan"])),
    _flag("--set", override),
), max_size=5).map(lambda groups: [x for g in groups for x in g]))
def test_study_arguments_never_give_a_traceback(tmp_path_factory, capsys, flags):
    out = tmp_path_factory.mktemp("fuzz-study") / "study"
    argv = ["study", *[piece for flag in flags for piece in (flag.split(" ") if " " in flag else [flag])],
            "--output", str(out), "--dry-run"]
    if "--family" not in flags:
        argv += ["--family", "loo"]
    code, err = _outcome(capsys, argv)
    _check(code, err, "study")


@pytest.mark.parametrize("argv", [
    ["train", "--set", "task.settings={digits: abc}", "--print-config"],
    ["train", "--set", "recipe.loss.name=", "--print-config"],
    ["train", "--set", "k=1e309", "--print-config"],
    ["train", "--set", "lr=nan", "--print-config"],
    ["study", "--family", "batch-size", "--values", "0", "--dry-run"],
])
def test_known_edge_cases(capsys, tmp_path, argv):
    code, err = _outcome(capsys, [*argv, "--output", str(tmp_path / "o")])
    _check(code, err, argv[0])
