"""DeepSpeed-Chat's RLHF console: the variants its script printed, written from the f-strings of
``training/step3_rlhf_finetuning/main.py`` (the real console is tests/curves/data/real_samples/
deepspeed_chat_issue586.log)."""

import pytest

from scalerl.curves import read_curves
from scalerl.curves.deepspeed_chat_log import read_deepspeed_chat_rows
from scalerl.curves.io import detect_format
from scalerl.errors import InputError

DASHES = "-" * 85


def _log(tmp_path, lines, name="step3.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _step(epoch, step, reward, act=0.5):
    return [f"epoch: {epoch}|step: {step}|ppo_ep: 1|act_loss: {act}|cri_loss: 0.25|unsuper_loss: 0.0",
            f"average reward score: {reward}", DASHES]


def test_a_txt_of_it_is_told_as_deepspeed_chat_not_a_pipe_delimited_table(tmp_path):
    path = _log(tmp_path, ["[2023-06-09 10:00:00,000] [INFO] [launch.py:145:main] WORLD INFO DICT", *_step(0, 0, -1.5)])
    assert detect_format(path) == "deepspeed-chat"


def test_the_step_goes_on_across_epochs_as_global_step(tmp_path):
    lines = [*_step(0, 0, -1.0), *_step(0, 1, -0.5), *_step(0, 2, 0.0), *_step(1, 0, 0.5), *_step(1, 1, 1.0)]
    (curve,) = read_curves(_log(tmp_path, lines), "global_step", "average_reward_score", bounded=False)
    assert list(curve.x) == [0, 1, 2, 3, 4] and list(curve.y) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    with pytest.raises(InputError, match="compute 'step' decreases at point 4"):  # (the epoch's own count)
        read_curves(_log(tmp_path, lines), "step", "average_reward_score", bounded=False)


def test_the_scripts_before_unsuper_loss_with_the_continued_strings_spaces(tmp_path):
    """Spring 2023: ``print(f'epoch: {epoch}|step: {step}|ppo_ep: {ppo_ep+1}| \\`` continued on the next source
    line (its indentation printed), no ``unsuper_loss``; printed after every PPO epoch: the step's last line."""
    old = "epoch: 0|step: {s}|ppo_ep: {p}|                         act_loss: {a} |cri_loss: 0.125"
    lines = [old.format(s=0, p=1, a=0.5), old.format(s=0, p=2, a=0.25), "average reward score: -2.5",
             old.format(s=1, p=1, a=0.75), "average reward score: -2.0"]
    rows, notes = read_deepspeed_chat_rows(_log(tmp_path, lines))
    assert [(r["step"], r["ppo_ep"], r["act_loss"], r["average_reward_score"]) for r in rows] == [
        (0, 2, 0.25, -2.5), (1, 1, 0.75, -2.0)]
    assert not notes


def test_a_step_line_cut_off_is_skipped_and_counted(tmp_path):
    lines = [*_step(0, 0, 0.1), "epoch: 0|step: 1|ppo_ep: 1|act_loss: 0.3|cri_lo", *_step(0, 2, 0.3)]
    (curve,) = read_curves(_log(tmp_path, lines), "global_step", "average_reward_score")
    assert list(curve.x) == [0, 2] and list(curve.y) == [0.1, 0.3]
    assert any("1 step or reward line(s) cut off or unreadable (line 4) skipped" in n for n in curve.notes)


def test_a_training_started_over_is_a_run_of_its_own(tmp_path):
    lines = [*_step(0, 0, 0.1), *_step(0, 1, 0.2), *_step(0, 0, 0.3), *_step(0, 1, 0.4)]
    curves = read_curves(_log(tmp_path, lines), "global_step", "average_reward_score")
    assert [list(c.y) for c in curves] == [[0.1, 0.2], [0.3, 0.4]]
