"""prime-rl's orchestrator console, read from what prime-rl's own logger printed
(tests/curves/data/make_primerl_console.py: ``setup_logger`` / ``format_time`` of
src/prime_rl/utils/logger.py and the ``Step ...`` / ``Evaluated ...`` f-strings of
src/prime_rl/orchestrator/orchestrator.py, ``log_train_batch`` / ``finalize_eval_batch``, at
PrimeIntellect-ai/prime-rl 559b44772e471d1538537b8805cc77f3824a5e64), fed the shipped verl run's
scores: an evaluation at step 1 (before training) and every 10th step, each logged two steps late."""

import csv
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.curves import read_curves
from scalerl.curves.io import detect_format, log_columns
from scalerl.curves.primerl_log import seconds
from scalerl.errors import InputError

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
Y = "eval/gsm8k/reward"


def _console(tmp_path, name="primerl_console", edit=None, out="orchestrator.log") -> Path:
    text = gzip.decompress((DATA / f"{name}.log.gz").read_bytes()).decode()
    path = tmp_path / out
    path.write_text(edit(text) if edit else text)
    return path


def _shipped():
    """(prime-rl step, seconds, score) of the run the fixtures were fed."""
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == RUN]
    return [(max(int(r["step"]) + 1, 1), 3600 * float(r["cum_wall_hours"]), float(r["val_score"])) for r in rows]


def test_an_orchestrator_log_is_recognised_and_read_as_the_run_it_logged(tmp_path):
    path = _console(tmp_path)
    assert detect_format(path) == "prime-rl"
    [curve] = read_curves(path, "step", Y)
    steps, secs, scores = map(np.array, zip(*_shipped()))
    np.testing.assert_array_equal(curve.x, steps)  # each evaluation at its own step, though logged two steps late
    np.testing.assert_allclose(curve.y, scores, atol=5e-5)  # printed with 4 decimals
    [timed] = read_curves(path, "cum:time/step", Y)
    # format_time prints a step's seconds cut to the second above a minute (~70 s here): within 2%
    np.testing.assert_allclose(np.diff(timed.x), np.diff(secs), rtol=2e-2)
    assert curve.dropped == 0
    assert {"step", "time/step", "train/reward", "train/trainable", "train/truncation", Y,
            "eval/gsm8k/policy_version"} <= set(log_columns(path))


def test_cli_fits_a_prime_rl_console(tmp_path, capsys):
    path = _console(tmp_path)
    code = main(["fit", str(path), "--x", "step", "--y", Y, "--bootstrap", "0", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    res = json.loads(out)
    assert res["x"] == "step" and res["y"] == Y and res["status"] == "ok"
    assert len(_shipped()) - 5 <= res["n_points"] <= len(_shipped())  # (less the opening plateau, if left out)
    assert 0.4 < res["A"] <= 1.0  # the run ends near 0.54


def test_an_unknown_column_lists_the_logs_columns(tmp_path, capsys):
    path = _console(tmp_path)
    with pytest.raises(InputError, match=re.escape(Y)):
        read_curves(path, "step", "eval/gsm8k/pass_rate")
    code = main(["fit", str(path), "--x", "step", "--y", "eval/gsm8k/pass_rate", "--bootstrap", "0"])
    assert code != 0 and Y in capsys.readouterr().err


def test_a_console_two_launches_printed_into_keeps_the_resumed_one(tmp_path):
    """Killed after step 105, resumed from the step-100 checkpoint: steps 101-105 twice."""
    path = _console(tmp_path, "primerl_console_resumed")
    assert detect_format(path) == "prime-rl"
    [curve] = read_curves(path, "step", Y)
    assert list(curve.x) == [s for s, _, _ in _shipped() if s <= 200]
    assert any("resumes from a checkpoint 1 time(s)" in n and "5 row(s)" in n for n in curve.notes)
    [train] = read_curves(path, "step", "train/reward")
    assert list(train.x) == list(range(1, 201))  # each step once, the resumed attempt's
    [timed] = read_curves(path, "cum:time/step", Y)
    [whole] = read_curves(_console(tmp_path, out="whole.log"), "cum:time/step", Y)
    np.testing.assert_allclose(timed.x, whole.x[:len(timed)])  # the abandoned steps' seconds not counted


def _relogged_step(text: str) -> tuple[str, str]:
    """The whole run's console as two launches would print it where the evaluation of step 100 finished
    before step 101 was logged and the first launch was killed right after it: the resumed launch (from
    the step-99 checkpoint) logs step 100 and its evaluation again. The abandoned attempt's evaluation
    reads 0.4444 (the resumed one's: the run's own). Returns the first launch's text and the second's."""
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Step 100 |" in line)
    evaluated = next(line for line in lines if "Evaluated gsm8k (Step 100)" in line)
    banner = next(line for line in _text("primerl_console_resumed").splitlines(keepends=True)
                  if "Resuming orchestrator" in line).replace("step 100", "step 99")
    abandoned = re.sub(r"Reward \d\.\d{4}", "Reward 0.4444", evaluated)
    return "".join(lines[:at + 1]) + abandoned, banner + "".join(lines[at:])


def test_a_resumed_launch_that_logs_again_the_step_the_abandoned_one_logged_last(tmp_path):
    """The step does not go back (100, then 100 again): the restart banner between them tells the
    abandoned attempt's step and evaluation from the resumed attempt's, which are the run's."""
    first, second = _relogged_step(_text())
    path = tmp_path / "orchestrator.log"
    path.write_text(first + second)
    [whole] = read_curves(_console(tmp_path, out="whole.log"), "cum:time/step", Y)
    for read in (path, _output_dir(tmp_path, {0: first, 1: second})):
        [curve] = read_curves(read, "step", Y)
        assert list(curve.x) == [s for s, _, _ in _shipped()]  # step 100 once
        assert 0.4444 not in curve.y
        assert any("step logged again after a restart" in n and "2 row(s)" in n for n in curve.notes)
        [timed] = read_curves(read, "cum:time/step", Y)
        np.testing.assert_allclose(timed.x, whole.x)  # step 100's seconds counted once
        [train] = read_curves(read, "step", "train/reward")
        assert list(train.x) == sorted(set(train.x))


def test_the_resumed_attempts_own_log_says_where_it_began(tmp_path):
    """``uv run rl`` gives each launch a log of its own (logs/attempt_<n>/orchestrator.log)."""
    path = _console(tmp_path, "primerl_console_resumed",
                    edit=lambda text: text[text.rindex("\n", 0, text.index("Resuming orchestrator")) + 1:])
    [curve] = read_curves(path, "step", Y)
    assert curve.x[0] == 110
    assert any("resumed from the checkpoint at step 100" in n for n in curve.notes)


def test_json_logging_and_several_training_environments(tmp_path):
    path = _console(tmp_path, "primerl_console_json")
    assert path.read_text().startswith('{"timestamp"')
    assert detect_format(path) == "prime-rl"
    [curve] = read_curves(path, "step", Y)
    assert list(curve.x) == [s for s, _, _ in _shipped() if s <= 100]
    [ratio] = read_curves(path, "step", "train/math/ratio")
    assert len(ratio) == 100 and set(ratio.y) == {0.5}
    [reward] = read_curves(path, "step", "train/gsm8k/reward")
    [total] = read_curves(path, "step", "train/reward")
    np.testing.assert_array_equal(reward.y, total.y)
    # The same messages as the console prints them without JSON: the ``╰─`` lines below the step's.
    records = [json.loads(line) for line in path.read_text().splitlines()]
    text = tmp_path / "text.log"
    text.write_text("".join(f"17:56:32 {r['level']:>7} {r['message']}\n" for r in records))
    assert "\t\t ╰─ math  | Ratio 50.0%" in text.read_text()
    assert log_columns(text) == log_columns(path)
    [again] = read_curves(text, "step", "train/math/ratio")
    np.testing.assert_array_equal(again.y, ratio.y)


def test_debug_level_lines_and_lines_without_colours(tmp_path):
    """``log.level=debug`` appends `` [file::line]``; a console captured without colours has none."""
    suffix = "\x1b[32m\x1b[1m\x1b[22m [orchestrator.py::893]\x1b[0m\x1b[0m"
    debug = _console(tmp_path, edit=lambda t: re.sub(r"(\x1b\[0m\x1b\[0m)$", r"\1" + suffix.replace("\\", "\\\\"),
                                                     t, flags=re.M), out="debug.log")
    assert "::893]" in debug.read_text()
    plain = _console(tmp_path, edit=lambda t: re.sub(r"\x1b\[[0-9;]*m", "", t), out="plain.log")
    [want] = read_curves(_console(tmp_path), "step", Y)
    for path in (debug, plain):
        assert detect_format(path) == "prime-rl"
        [curve] = read_curves(path, "step", Y)
        np.testing.assert_array_equal(curve.x, want.x)
        np.testing.assert_array_equal(curve.y, want.y)


def test_lines_cut_off_are_skipped_and_counted(tmp_path):
    def cut(text):
        lines = text.split("\n")
        i = next(i for i, line in enumerate(lines) if "Evaluated gsm8k (Step 50)" in line)
        lines[i] = lines[i][:lines[i].index("Truncation") + 11]  # "Truncation " and no figure
        j = next(i for i, line in enumerate(lines) if "SUCCESS" in line and "Step 77 |" in line)
        lines[j] = lines[j][:lines[j].index("Reward") + 9]  # "Reward 0." -- a figure cut short
        lines.insert(j, "\x00\x00garbage | Reward Step 3 |")
        return "\n".join(lines) + "16:02:11 SUCCESS Step 431 |   1m 5s | Reward 0.5"  # killed mid-line
    path = _console(tmp_path, edit=cut)
    [curve] = read_curves(path, "step", Y)
    assert 50 not in curve.x and len(curve) == len(_shipped()) - 1
    assert any("2 step or evaluation line(s) cut off or unreadable" in n for n in curve.notes)
    assert any("ends inside its last line" in n and "Reward 0.5" in n for n in curve.notes)  # (the killed one)
    [train] = read_curves(path, "step", "train/reward")
    assert 77 not in train.x and 431 not in train.x and len(train) == 429


def test_a_log_without_orchestrator_lines(tmp_path):
    path = tmp_path / "orchestrator.log"
    path.write_text("17:56:32    INFO Starting orchestrator loop (max_steps=10)\n"
                    "17:56:40 WARNING Step 1: empty train batch after 0 finalized episodes\n")
    with pytest.raises(InputError, match="without verl step lines.*prime-rl 'Step N"):
        read_curves(path, "step", Y)
    with pytest.raises(InputError, match="no prime-rl orchestrator lines"):
        read_curves(path, "step", Y, fmt="prime-rl")


@pytest.mark.parametrize("text, want", [("800ms", 0.8), ("41.3s", 41.3), ("2m 5s", 125), ("1h 23m", 4980),
                                        ("1d 2h", 93600), ("  1m 6s", 66), ("5 s", None), ("1h", None)])
def test_durations_as_prime_rl_prints_them(text, want):
    assert seconds(text) == pytest.approx(want) if want is not None else seconds(text) is None


# --- an output directory: ``logs/attempt_<n>/orchestrator.log``, one per launch ---------------------

def _text(name="primerl_console") -> str:
    return gzip.decompress((DATA / f"{name}.log.gz").read_bytes()).decode()


def _halves(text: str) -> tuple[str, str]:
    """The resumed fixture as ``uv run rl`` writes it: the first launch's log, and the second's (from
    its ``Resuming orchestrator`` line on)."""
    cut = text.rindex("\n", 0, text.index("Resuming orchestrator")) + 1
    return text[:cut], text[cut:]


def _output_dir(tmp_path, attempts: dict[int, str | bytes], name="my-run") -> Path:
    out = tmp_path / name
    for n, text in attempts.items():
        log = out / "logs" / f"attempt_{n}" / "orchestrator.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(text if isinstance(text, bytes) else text.encode())
    return out


def _same(a, b):
    assert len(a) == len(b)
    for ca, cb in zip(a, b):
        np.testing.assert_array_equal(ca.x, cb.x)
        np.testing.assert_array_equal(ca.y, cb.y)


def test_an_output_directory_is_read_as_its_attempts_consoles_joined(tmp_path):
    whole = _console(tmp_path, "primerl_console_resumed", out="joined.log")
    first, second = _halves(whole.read_text())
    out = _output_dir(tmp_path, {0: first, 1: second})
    for path in (out, out / "logs"):
        assert detect_format(path) == "prime-rl"
        for x, y in (("step", Y), ("step", "train/reward"), ("cum:time/step", Y)):
            [curve] = read_curves(path, x, y)
            _same([curve], read_curves(whole, x, y))
            assert curve.name == "my-run"  # the output directory's, not "orchestrator" nor "logs"
        [curve] = read_curves(path, "step", Y)
        assert any("resumes from a checkpoint 1 time(s)" in n and "5 row(s)" in n for n in curve.notes)
        assert log_columns(path) == log_columns(whole)


def test_an_output_directory_with_a_wandb_store_is_read_by_its_consoles_and_the_store_on_its_own(tmp_path):
    """prime-rl's W&B monitor writes into the output directory (``wandb.init(dir=output_dir)``:
    ``<output_dir>/wandb/run-<time>-<id>/run-<id>.wandb``): the directory stays prime-rl's, read
    by its consoles, and its ``wandb`` directory is the W&B store."""
    import shutil

    pytest.importorskip("wandb")
    whole = _console(tmp_path, out="joined.log")
    out = _output_dir(tmp_path, {0: whole.read_text()})
    run_dir = out / "wandb" / "run-20251201_103000-abc123"
    run_dir.mkdir(parents=True)
    shutil.copy(DATA / "wandb_0_17_9_run.wandb", run_dir / "run-abc123.wandb")
    assert detect_format(out) == "prime-rl" and detect_format(out / "logs") == "prime-rl"
    _same(read_curves(out, "step", Y), read_curves(whole, "step", Y))
    assert detect_format(out / "wandb") == "wandb-run"
    [curve] = read_curves(out / "wandb", "step", "val/acc")
    assert len(curve.x) == 10


def test_attempts_are_read_in_numeric_order_and_latest_is_no_attempt(tmp_path):
    first, second = _halves(_text("primerl_console_resumed"))
    out = _output_dir(tmp_path, {9: first, 10: second})
    (out / "logs" / "latest").symlink_to("attempt_10", target_is_directory=True)
    whole = tmp_path / "joined.log"
    whole.write_text(first + second)
    [curve] = read_curves(out, "step", "train/reward")
    assert list(curve.x) == list(range(1, 201))  # attempt_9 before attempt_10; latest not read again
    _same([curve], read_curves(whole, "step", "train/reward"))


def test_an_attempt_started_over_is_a_run_of_its_own_named_after_the_directory(tmp_path):
    text = _text()
    cut = text.index("Step 51 |")
    cut = text.rindex("\n", 0, cut) + 1
    out = _output_dir(tmp_path, {0: text[:cut], 1: text})
    curves = read_curves(out / "logs", "step", Y)
    assert [c.name for c in curves] == ["my-run#1", "my-run#2"]  # (as split_attempts names them)
    assert curves[1].x[-1] == 430


def test_empty_attempt_logs_are_skipped_and_said(tmp_path):
    first, second = _halves(_text("primerl_console_resumed"))
    out = _output_dir(tmp_path, {0: first, 1: "", 2: second})
    [curve] = read_curves(out, "step", "train/reward")
    assert list(curve.x) == list(range(1, 201))
    assert any("attempt_1/orchestrator.log" in n and "empty" in n for n in curve.notes)


def test_unreadable_attempt_logs_are_one_line_errors_naming_the_file_and_junk_bytes_cost_their_line(tmp_path):
    first, second = _halves(_text("primerl_console_resumed"))
    # Bytes that are not UTF-8 (a crash's junk) cost their line, as in a single console: no error.
    junk = _output_dir(tmp_path, {0: first, 1: b"\xff\xfe\x00 not text\n" + second.encode()}, name="junk")
    [whole] = read_curves(_output_dir(tmp_path, {0: first, 1: second}, name="whole"), "step", Y)
    assert list(read_curves(junk, "step", Y)[0].y) == list(whole.y)
    unreadable = _output_dir(tmp_path, {0: first}, name="unreadable")
    (unreadable / "logs" / "attempt_1" / "orchestrator.log").mkdir(parents=True)  # (root reads a chmod 000 file)
    with pytest.raises(InputError, match=r"attempt_1/orchestrator\.log") as exc:
        read_curves(unreadable, "step", Y)
    assert "\n" not in str(exc.value)
    none = _output_dir(tmp_path, {0: "17:56:32    INFO Training from scratch\n", 1: ""}, name="none")
    with pytest.raises(InputError, match=r"none.*no prime-rl orchestrator lines.*attempt_0/orchestrator\.log") as exc:
        read_curves(none, "step", Y)
    assert "\n" not in str(exc.value)


def test_metrics_jsonl_beside_the_consoles_and_alone(tmp_path):
    first, second = _halves(_text("primerl_console_resumed"))
    out = _output_dir(tmp_path, {0: first, 1: second})
    (out / "metrics.jsonl").write_text('{"step": 1, "time": 1700000000.0, "reward/mean": 0.2}\n')
    assert detect_format(out) == "prime-rl"  # the consoles are read (metrics.jsonl can be named itself)
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "metrics.jsonl").write_text('{"step": 1, "time": 1700000000.0, "reward/mean": 0.2}\n')
    with pytest.raises(InputError, match="name the log among them"):
        detect_format(alone)


def test_cli_fits_a_prime_rl_output_directory(tmp_path, capsys):
    out = _output_dir(tmp_path, {0: _text()})
    code = main(["fit", str(out), "--x", "step", "--y", Y, "--bootstrap", "0", "--json"])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    res = json.loads(stdout)
    assert res["status"] == "ok" and res["y"] == Y
