"""A launch banner that says it resumed a checkpoint continues the run, whatever its first step.

A launch banner that says the launch resumes a checkpoint -- verl's ``Resuming from
.../global_step_N``, a Hugging Face ``Trainer``'s ``Continuing / Resuming training from checkpoint``
-- was overruled by the counter: where the resumed attempt's first value was at or below the first
value of the run so far, :func:`scalerl.curves.attempts.split_attempts` read "the step starts
over", a run of its own, and the abandoned attempt's rows after the checkpoint stayed in run #1
(found by a review; the banners now mark the launch as a resume: ``RESUMED``).
"""

from __future__ import annotations

from scalerl.curves.dict_lines_log import read_dict_lines
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
