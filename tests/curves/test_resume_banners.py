"""A launch banner that says it resumed a checkpoint continues the run, whatever its first step.

A launch banner that says the launch resumes a checkpoint -- verl's ``Resuming from
.../global_step_N``, a Hugging Face ``Trainer``'s ``Continuing / Resuming training from checkpoint``
-- was overruled by the counter: where the resumed attempt's first value was at or below the first
value of the run so far, :func:`scalerl.curves.attempts.split_attempts` read "the step starts
over", a run of its own, and the abandoned attempt's rows after the checkpoint stayed in run #1
(found by a review; the banners now mark the launch as a resume: ``RESUMED``).
"""

from __future__ import annotations

import pytest

from scalerl.curves.dict_lines_log import read_dict_lines
from scalerl.curves.io import read_curves
from scalerl.curves.verl_log import read_verl


def _verl_attempt(resume_from: int, last: int) -> list[str]:
    """verl's console for a launch resumed from ``global_step_<resume_from>`` (val_before_train: the
    checkpoint evaluated at its step), training on to ``last`` and evaluating every 5 steps."""
    p = "(TaskRunner pid=1) "
    out = [f"{p}Load from checkpoint folder: /ckpt/global_step_{resume_from}",
           f"{p}Setting global step to {resume_from}",
           f"{p}Resuming from /ckpt/global_step_{resume_from}",
           f"{p}step:{resume_from} - val-core/acc:{0.1 + resume_from / 100:.3f}"]
    for s in range(resume_from + 1, last + 1):
        val = f" - val-core/acc:{0.1 + s / 100:.3f}" if s % 5 == 0 else ""
        out.append(f"{p}step:{s} - timing_s/step:10.000 - actor/loss:{1 / s:.3f}{val}")
    return out


def test_verl_resume_banner_at_the_consoles_first_step_is_a_resume(tmp_path):
    # The console begins at a resumed launch (an earlier `tee` overwrote the log); that attempt died at
    # step 17 before its step-20 checkpoint, and the next launch (`tee -a`) resumed from step 10 again.
    log = tmp_path / "verl.log"
    log.write_text("\n".join(_verl_attempt(10, 17) + _verl_attempt(10, 25)) + "\n")
    curves = read_verl(log, "step", "val-core/acc", bounded=False)
    assert len(curves) == 1  # (was: verl#1, steps 10-17 with its evaluation at 15, and verl#2)
    assert list(curves[0].x) == [10, 15, 20, 25]


def test_trainer_resume_banner_at_the_first_printed_epoch_is_a_resume(tmp_path):
    # transformers 4.x prints the epoch rounded to 2 places: on 6250 steps an epoch, steps 10-30 print
    # 0.0. Evaluating and saving every 20 steps; killed after step 40's evaluation (checkpoint-40 not yet
    # written), resumed from checkpoint-20 with eval_on_start, which evaluates it again at epoch 0.0.
    banner = ["[INFO|trainer.py:2314] ***** Running training *****", "[INFO|trainer.py:2315]   Num examples = 200,000"]
    resumed = ["[INFO|trainer.py:2339]   Continuing training from checkpoint, will skip to saved global_step",
               "[INFO|trainer.py:2340]   Continuing training from epoch 0",
               "[INFO|trainer.py:2341]   Continuing training from global step 20"]

    def printed(step: int, **metrics) -> str:
        return str({**metrics, "epoch": round(step / 6250, 2)})

    first = banner + [printed(10, loss=2.0), printed(20, loss=1.9), printed(20, eval_loss=1.95),
                      printed(30, loss=1.8), printed(40, loss=1.7), printed(40, eval_loss=1.75)]
    second = banner + resumed + [printed(20, eval_loss=1.951), printed(30, loss=1.81), printed(40, loss=1.71),
                                 printed(40, eval_loss=1.751), printed(60, loss=1.6), printed(60, eval_loss=1.65)]
    log = tmp_path / "trainer.log"
    log.write_text("\n".join(first + second) + "\n")
    curves = read_dict_lines(log, "epoch", "eval_loss", bounded=False)
    assert len(curves) == 1  # main: trainer#1 (the abandoned attempt's evaluation at step 40 kept) and trainer#2
    assert 1.75 not in list(curves[0].y)


# ------------------------------------------------------------------ review ES: Unsloth consoles

# The real file: johnson7788/RLDecisionAgent docs/Unsloth/train_grpo.log (commit ff2bad55). Two Unsloth +
# TRL GRPOTrainer launches printed into one console: a 20-step run on DAPO-Math, then a 50-step run on a
# custom data set. Unsloth replaces transformers' "***** Running training *****" banner with its own; each
# Trainer.train() ends with the summary dict {'train_runtime': ..., 'train_loss': ..., 'epoch': E}. The
# first run's last epoch is 0.01 and the second run's first is 0.03, so the epoch never goes back.
_BANNER = (
    "==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1\n"
    "   \\\\   /|    Num examples = {n} | Num Epochs = 1 | Total steps = {steps}\n"
)
_ROW = ("{{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 5e-06, 'num_tokens': {tok}.0, "
        "'rewards/check_answer/mean': {r}, 'reward': {r}, 'reward_std': 1.5, 'frac_reward_zero_std': 0.0, "
        "'completion_length': 700.0, 'kl': 0.0, 'epoch': {e}}}\n")
_END = ("{{'train_runtime': 1021.5975, 'train_samples_per_second': 0.626, 'train_steps_per_second': 0.02, "
        "'train_loss': -3.3993273973464965e-09, 'epoch': {e}}}\n")


def _two_unsloth_trainings(tmp_path, *, finished: bool = True):
    text = "CUDA_VISIBLE_DEVICES=2 python train_grpo.py --max-steps 12\n" + _BANNER.format(n="12,709", steps=12)
    for i in range(12):
        text += _ROW.format(tok=1000 * (i + 1), r=-3.5 + 0.01 * i, e=0.0 if i < 6 else 0.01)
    text += _END.format(e=0.01) if finished else ""
    text += "\n# custom data\nCUDA_VISIBLE_DEVICES=2 python train_grpo.py --max-steps 14\n"
    text += _BANNER.format(n="33", steps=14)
    for i in range(14):
        text += _ROW.format(tok=500 * (i + 1), r=-1.0 + 0.1 * i, e=round(0.03 * (i + 1), 2))
    text += _END.format(e=0.42)
    log = tmp_path / "train_grpo.log"
    log.write_text(text)
    return log


def test_two_unsloth_trainings_in_one_console_are_two_runs(tmp_path):
    """(Review ES: read as one curve of 26 points, the second training's rewards appended to the first's.)"""
    log = _two_unsloth_trainings(tmp_path)
    curves = read_dict_lines(log, "epoch", "reward", bounded=False)
    assert len(curves) == 2
    assert sorted(len(c.x) for c in curves) == [12, 14]


def test_an_unsloth_training_killed_and_launched_again_is_left_to_its_epoch(tmp_path):
    """No summary dict before the second banner: the first training was killed, and Unsloth's banner says nothing
    of a checkpoint -- the epoch decides (here it goes on above the first's last: one run, as before)."""
    curves = read_dict_lines(_two_unsloth_trainings(tmp_path, finished=False), "epoch", "reward", bounded=False)
    assert len(curves) == 1


def test_an_evaluation_printed_after_the_trainers_summary_stays_in_its_run(tmp_path):
    """trainer.evaluate() after trainer.train() prints its dict after the summary, with no launch banner: the
    same run's last evaluation, not a run of its own."""
    text = _BANNER.format(n="12", steps=12)
    text += "".join(f"{{'eval_reward': {0.1 * i:.1f}, 'epoch': {0.1 * i:.1f}}}\n" for i in range(1, 9))
    text += _END.format(e=0.8) + "{'eval_reward': 0.85, 'epoch': 0.8}\n"
    log = tmp_path / "console.log"
    log.write_text(text)
    curves = read_dict_lines(log, "epoch", "eval_reward")
    assert len(curves) == 1 and curves[0].y[-1] == 0.85


def test_a_log_line_ending_in_a_dict_of_text_is_no_row(tmp_path):
    """Review ES (the real Unsloth console): `[INFO] 字段映射完成，示例：{"content": "...", "role": "user"}` -- a data
    sample shown -- was read as a row, and `content` and `role` were offered as the log's columns."""
    from scalerl.curves.io import log_columns

    text = '[INFO] 字段映射完成，示例：{"content": "What is 2+2?", "role": "user"}\n'
    text += "".join(f"{{'reward': {0.1 * i:.1f}, 'epoch': {0.1 * i:.1f}}}\n" for i in range(1, 9))
    log = tmp_path / "console.log"
    log.write_text(text, encoding="utf-8")
    assert sorted(log_columns(log)) == ["epoch", "reward"]
    assert len(read_dict_lines(log, "epoch", "reward")[0].x) == 8


# ------------------------------------------------------------------ review EU

# Unsloth's launch banner (unsloth/models/llama.py: the Trainer's "Running training" block replaced by
# logger.warning(debug_info)); it says nothing of a checkpoint resumed.
_RESUMED_BANNER = (
    "==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1\n"
    "   \\\\   /|    Num examples = 1,000 | Num Epochs = 1 | Total steps = {steps}\n"
    "O^O/ \\_/ \\    Batch size per device = 2 | Gradient accumulation steps = 4\n"
)


def _epoch_row(i: int) -> str:
    return f"{{'loss': 0.01, 'reward': {0.1 + 0.005 * i:.4f}, 'epoch': {0.008 * (i + 1):.3f}}}\n"


def _summary_dict(epoch: float) -> str:
    return (f"{{'train_runtime': 1021.6, 'train_samples_per_second': 0.626, 'train_steps_per_second': 0.02, "
            f"'train_loss': 0.01, 'epoch': {epoch}}}\n")


def test_unsloth_training_resumed_after_it_finished_stays_one_run(tmp_path):
    """Review EU: split into train#1 and train#2 by the first version of the rule (a summary, then a banner)."""
    # trainer.train() to 60 steps, then (max_steps raised to 120) trainer.train(resume_from_checkpoint=True):
    # same data (Num examples = 1,000), the epoch goes on from 0.480 to 0.488 at the next logging step, as a
    # killed training's resume does -- and at the default verbosity transformers' "Continuing training from
    # checkpoint" (logger.info) is not printed. Before 8800841 this was one run of 120 points.
    text = _RESUMED_BANNER.format(steps=60) + "".join(_epoch_row(i) for i in range(60)) + _summary_dict(0.48)
    text += _RESUMED_BANNER.format(steps=120) + "".join(_epoch_row(i) for i in range(60, 120)) + _summary_dict(0.96)
    log = tmp_path / "train.log"
    log.write_text(text)
    curves = read_dict_lines(log, "epoch", "reward", bounded=False)
    assert [len(c.x) for c in curves] == [120], [(c.name, len(c.x), float(c.x[0])) for c in curves]


def test_json_printed_dict_with_a_nan_keeps_its_finite_metrics(tmp_path):
    """Review EU: the NaN line was "1 dict-like line(s) could not be read", its finite reward lost with it."""
    # print(json.dumps({"step": i, "reward": r, "kl": kl})) with a NaN kl at step 3 (json.dumps default
    # allow_nan=True writes NaN); other console lines before the dicts, so the file is read as dict-lines.
    text = "Loading model...\nsome warning\n"
    text += "".join(f'{{"step": {i}, "reward": {0.1 * i:.2f}, "kl": {"NaN" if i == 3 else 0.01}}}\n'
                    for i in range(1, 7))
    log = tmp_path / "train.log"
    log.write_text(text)
    (curve,) = read_curves(log, "step", "reward", bounded=False)
    assert [float(v) for v in curve.x] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], curve.notes


def test_a_dict_of_text_does_not_make_a_lone_printed_dict_a_log(tmp_path):
    """Review EU: a data sample shown beside one config dict made the console a one-row dict-lines log."""
    from scalerl.curves.io import detect_format
    from scalerl.errors import InputError

    lone = "starting\nconfig {'lr': 1e-05, 'batch_size': 8}\ndone\n"
    plain = tmp_path / "plain.log"
    plain.write_text(lone)
    with pytest.raises(InputError, match="one printed dict"):
        detect_format(plain)  # (today: refused, as documented)
    sample = tmp_path / "sample.log"
    sample.write_text('[INFO] sample: {"content": "What is 2+2?", "role": "user"}\n' + lone)
    with pytest.raises(InputError, match="one printed dict"):
        detect_format(sample)  # (was: 'dict-lines' -- the data sample counted as the second metric dict)


# ------------------------------------------------------------------ reviews EV, EW, EX: a finished training's settings

# unsloth's debug_info f-string (unslothai/unsloth unsloth/models/llama.py, logger.warning): current releases' banner
_UNSLOTH_BANNER = (
    "==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1\n"
    "   \\\\   /|    Num examples = {n:,} | Num Epochs = 1 | Total steps = {steps}\n"
    "O^O/ \\_/ \\    Batch size per device = {bs} | Gradient accumulation steps = {ga}\n"
    "\\        /    Data Parallel GPUs = {dp} | Total batch size ({bs} x {ga} x {dp}) = {total}\n"
    " \"-____-\"     Trainable parameters = 3,194,880 of 856,180,800 (0.37% trained)\n"
)


def _finished(epoch: float) -> str:
    return (f"{{'train_runtime': 12.3, 'train_samples_per_second': 3.2, 'train_steps_per_second': 0.4, "
            f"'train_loss': 0.5, 'epoch': {epoch:.4g}}}\n")


def _finished_training(n: int, bs: int, ga: int, dp: int = 1, steps: range = range(1, 6)) -> str:
    """One Unsloth training to its end-of-training summary: its banner -- printed by every rank (logger.warning:
    TrainingArguments.log_level_replica='warning'), their lines interleaved as torchrun --tee's per-rank threads
    print them, each behind its prefix, where ``dp`` > 1 -- then a dict per step in ``steps``."""
    total = bs * ga * dp
    banner = _UNSLOTH_BANNER.format(n=n, steps=steps[-1], bs=bs, ga=ga, dp=dp, total=total).splitlines()
    prefix = (lambda r: f"[default{r}]:") if dp > 1 else (lambda r: "")
    text = "".join(f"{prefix(r)}{line}\n" for line in banner for r in range(dp))
    for step in steps:
        text += f"{prefix(0)}{{'loss': 0.5, 'reward': {0.1 + 0.01 * step:.3f}, 'epoch': {total * step / n:.4g}}}\n"
    return text + prefix(0) + _finished(total * steps[-1] / n)


def test_two_finished_unsloth_trainings_on_the_same_data_with_another_batch_size_are_two_runs(tmp_path):
    """Review EV: a batch-size sweep on one data set (Num examples alike) appended to one console was one run."""
    log = tmp_path / "sweep.log"
    log.write_text(_finished_training(1000, 2, 4) + _finished_training(1000, 16, 4))  # epochs never go back
    curves = read_dict_lines(log, "epoch", "reward", bounded=False)
    assert [len(c.x) for c in curves] == [5, 5], [(c.name, len(c.x)) for c in curves]  # (was: [10])


def test_batch_size_sweep_in_a_two_rank_console_is_two_runs(tmp_path):
    """Review EX: the second rank's banner line restarted the reading, and its Total batch size was never read."""
    log = tmp_path / "sweep.log"
    log.write_text(_finished_training(1000, 1, 1, dp=2) + _finished_training(1000, 4, 2, dp=2))  # batch 2, then 16
    curves = read_dict_lines(log, "epoch", "reward", bounded=False)
    assert [len(c.x) for c in curves] == [5, 5], [(c.name, len(c.x)) for c in curves]


def test_finished_unsloth_training_resumed_with_another_split_of_the_same_batch_is_one_run(tmp_path):
    """Review EW: resume_from_checkpoint on a bigger GPU with max_steps raised to 10 -- batch 4 x 2, the same 8 a
    step as 2 x 4: its epoch goes on from 0.04 to 0.08 as one training's does, and it was read as two runs."""
    log = tmp_path / "resumed.log"
    log.write_text(_finished_training(1000, 2, 4) + _finished_training(1000, 4, 2, steps=range(6, 11)))
    curves = read_dict_lines(log, "epoch", "reward", bounded=False)
    assert [len(c.x) for c in curves] == [10], [(c.name, len(c.x)) for c in curves]  # (was: [5, 5])


def test_an_evaluation_logged_before_the_first_dict_does_not_replace_the_banners_num_examples(tmp_path):
    """Review EW: at INFO (TrainingArguments(log_level="info")) an evaluation before the launch's first training
    dict logs its own 'Num examples = 50', which stood in for the banner's."""
    def training(n: int) -> str:
        text = _UNSLOTH_BANNER.format(n=n, steps=6, bs=2, ga=4, dp=1, total=8)
        # eval_steps=1, logging_steps=2: the evaluation of step 1 is the launch's first dict
        text += "***** Running Evaluation *****\n  Num examples = 50\n  Batch size = 8\n"
        for step in range(1, 7):
            if step % 2 == 0:
                text += f"{{'loss': 0.5, 'reward': {0.1 + 0.01 * step:.3f}, 'epoch': {8 * step / n:.4g}}}\n"
            if step > 1:
                text += "***** Running Evaluation *****\n  Num examples = 50\n  Batch size = 8\n"
            text += f"{{'eval_loss': 0.4, 'eval_reward': {0.2 + 0.01 * step:.3f}, 'epoch': {8 * step / n:.4g}}}\n"
        return text + _finished(8 * 6 / n)

    log = tmp_path / "two.log"
    log.write_text(training(2000) + training(200))  # epochs 0.004..0.024, then 0.04..0.24: it never goes back
    curves = read_dict_lines(log, "epoch", "eval_reward", bounded=False)
    assert [len(c.x) for c in curves] == [6, 6], [(c.name, len(c.x)) for c in curves]  # (was: one run)
