"""``--x cum:`` and the time a run spent saving checkpoints and validating: ``cum:A-B-C`` takes columns
off a running total, and a summed timer that holds a checkpoint-save or validation timer is said,
with the --x that leaves it out -- but only where the log shows it holds it."""

import random

import pytest

from scalerl.curves import read_curve
from scalerl.errors import InputError

Y = "val-core/openai/gsm8k/reward/mean@1"
CLEAN = "cum:timing_s/step-timing_s/save_checkpoint-timing_s/testing"


def verl_console(*, nested: bool, seed: int = 0) -> str:
    """A verl console log in the layout of eric-haibin-lin/verl-data gsm8k/qwen2-7b-fsdp2.log (105 GRPO
    steps of ~155 s, validation every 5 steps ~44 s, a checkpoint every 20 and at the end ~2,330 s: its
    figures). ``nested``: timing_s/step holds the two (verl before PR #3117), else they come after it."""
    rng = random.Random(seed)
    lines = [f"(TaskRunner pid=1) step:0 - {Y}:0.229"]
    for s in range(1, 106):
        train = 155 + rng.uniform(-8, 8)
        parts, step = [f"actor/pg_loss:{rng.uniform(-0.02, 0.05):.3f}", f"timing_s/gen:{0.26 * train:.3f}"], train
        if s % 5 == 0 or s == 105:
            t = 44 + rng.uniform(-1, 2)
            parts += [f"{Y}:{0.88 + rng.uniform(-0.01, 0.01):.3f}", f"timing_s/testing:{t:.3f}"]
            step += t if nested else 0
        if s % 20 == 0 or s == 105:
            t = 2330 + rng.uniform(-20, 20)
            parts.append(f"timing_s/save_checkpoint:{t:.3f}")
            step += t if nested else 0
        lines.append(f"(TaskRunner pid=1) step:{s} - " + " - ".join(parts + [f"timing_s/step:{step:.3f}"]))
    return "\n".join(lines) + "\n"


def _write(tmp_path, text, name="verl.log"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_step_timer_holding_checkpoint_saves_and_validation_is_said_with_the_x_without_them(tmp_path):
    path = _write(tmp_path, verl_console(nested=True))
    c = read_curve(path, x="cum:timing_s/step", y=Y)
    (note,) = [n for n in c.notes if "not training" in n]
    assert "timing_s/save_checkpoint (checkpoint saves" in note and "timing_s/testing (validation" in note
    assert f"--x '{CLEAN}' leaves it out" in note
    clean = read_curve(path, x=CLEAN, y=Y)
    assert not [n for n in clean.notes if "not training" in n]
    # What is left is the training: ~155 s a step, without the ~2,330 s jumps at the saves.
    assert clean.x[-1] == pytest.approx(105 * 155, rel=0.02)
    assert c.x[-1] - clean.x[-1] == pytest.approx(6 * 2330 + 21 * 44.5, rel=0.02)  # saves at 20, 40, ..., 100, 105
    share = (c.x[-1] - clean.x[-1]) / c.x[-1]
    assert f"{100 * share:.0f}% of x" in note


def test_a_step_timer_that_does_not_hold_them_gets_no_note_and_refuses_taking_them_off(tmp_path):
    """verl since PR #3117 (August 2025) times testing and save_checkpoint after the step: the same
    names on the same rows, not inside timing_s/step -- nothing to say, nothing to take off."""
    path = _write(tmp_path, verl_console(nested=False))
    c = read_curve(path, x="cum:timing_s/step", y=Y)
    assert not [n for n in c.notes if "not training" in n or "includes it" in n]
    with pytest.raises(InputError, match="takes more off than timing_s/step holds .* leave it out of --x"):
        read_curve(path, x=CLEAN, y=Y)
    # Validation alone (44 s, under a step's 155 s) would go off silently: the log shows it is not inside.
    short = read_curve(path, x="cum:timing_s/step-timing_s/testing", y=Y)
    (note,) = [n for n in short.notes if "takes off" in n]
    assert "takes off timing_s/testing, but in this log timing_s/step does not grow with it" in note


def test_a_glob_that_adds_up_a_validation_timer_is_said(tmp_path):
    """verl 0.1 logged timing/testing beside its phases: cum:timing/* added the validation in."""
    rows = ["step:0 - val/test_score/openai/gsm8k:0.2"]
    for s in range(1, 41):
        test = f" - val/test_score/openai/gsm8k:{0.3 + s / 100:.3f} - timing/testing:30.000" if s % 5 == 0 else ""
        rows.append(f"step:{s} - timing/gen:50.000 - timing/update_actor:50.000{test}")
    path = _write(tmp_path, "\n".join(rows) + "\n")
    c = read_curve(path, x="cum:timing/*", y="val/test_score/openai/gsm8k")
    (note,) = [n for n in c.notes if "not training" in n]
    assert note.startswith("cum:timing/* adds up time that is not training: timing/testing (validation, 240 in all)")
    assert "--x 'cum:timing/*-timing/testing' leaves it out" in note
    clean = read_curve(path, x="cum:timing/*-timing/testing", y="val/test_score/openai/gsm8k")
    assert clean.x[-1] == 40 * 100.0


def test_a_column_whose_name_holds_a_dash_is_read_whole(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("".join(f'{{"step": {s}, "time/step-total": 10, "time/save-ckpt": {5 if s == 2 else 0}, '
                            f'"acc": {0.1 * s}}}\n' for s in range(1, 5)))
    assert list(read_curve(path, x="cum:time/step-total", y="acc").x) == [10, 20, 30, 40]
    assert list(read_curve(path, x="cum:time/step-total-time/save-ckpt", y="acc").x) == [10, 15, 25, 35]
    # A term taken off that the log lacks takes off 0, said; the summed term must be there.
    nope = read_curve(path, x="cum:time/step-total-nope", y="acc")
    assert list(nope.x) == [10, 20, 30, 40] and [n for n in nope.notes if "'nope' logged nowhere" in n]
    with pytest.raises(InputError, match="no x column 'cum:time/step-totals-nope'"):
        read_curve(path, x="cum:time/step-totals-nope", y="acc")


def test_tensorboard_cum_takes_off_and_says_the_same(tmp_path):
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    w = SummaryWriter(str(tmp_path / "run"))
    rng = random.Random(1)
    for s in range(1, 41):
        save = 900.0 if s % 10 == 0 else 0.0
        if save:
            w.add_scalar("timing_s/save_checkpoint", save, s)
        w.add_scalar("timing_s/step", 100.0 + rng.uniform(-3, 3) + save, s)
        if s % 5 == 0:
            w.add_scalar(Y, 0.5 + s / 200, s)
    w.close()
    c = read_curve(tmp_path / "run", x="cum:timing_s/step", y=Y)
    (note,) = [n for n in c.notes if "not training" in n]
    assert "--x 'cum:timing_s/step-timing_s/save_checkpoint' leaves it out" in note
    clean = read_curve(tmp_path / "run", x="cum:timing_s/step-timing_s/save_checkpoint", y=Y)
    assert c.x[-1] - clean.x[-1] == pytest.approx(4 * 900.0)
