"""Excerpts of real framework logs, as users pasted them into public GitHub issues and pull requests
(tests/curves/data/real_samples/README.md names each one's source): each is told as its framework's
format, and its curve is the steps and values the text shows."""

from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import read_curves
from scalerl.curves.io import detect_format, log_columns
from scalerl.errors import InputError

SAMPLES = Path(__file__).parent / "data" / "real_samples"


@pytest.mark.parametrize("name, fmt", [
    ("verl_issue2060.log", "verl"),
    ("verl_awesome_ml_sys_issue106.log", "verl"),
    ("trl_issue3452.log", "dict-lines"),
    ("nemo_rl_dpo_nemo_platform_pr901.log", "nemo-rl"),
    ("primerl_pr1318.log", "prime-rl"),
    ("primerl_pr2280.log", "prime-rl"),
    ("slime_issue1837.log", "dict-lines"),
    ("rllm_verl_issue54.log", "verl"),
    ("trl_ppo_hongbomiao_pr37684.log", "dict-lines"),
    ("unsloth_grpo_issue2291.txt", "csv"),
    ("torchtune_pr1358.log", "torchtune"),
    ("torchtune_pr640.log", "torchtune"),
    ("mlx_lm_pr330.log", "mlx-lm"),
    ("mlx_lm_issue18.log", "mlx-lm"),
    ("mlx_lm_orpo_pr6.log", "mlx-lm"),
    ("trl_dpo_pr570.log", "dict-lines"),
    ("trl_dpo_issue1236.log", "dict-lines"),
    ("open_r1_grpo_issue255.log", "dict-lines"),
    ("llamafactory_trainer_log_issue774.jsonl", "jsonl"),
    ("deepspeed_chat_issue586.log", "deepspeed-chat"),
    ("mlx_examples_grpo_pr1233.log", "mlx-lm"),
])
def test_each_sample_is_told_as_its_frameworks_log(name, fmt):
    assert detect_format(SAMPLES / name) == fmt


def _curve(name, x, y, **kw):
    (curve,) = read_curves(SAMPLES / name, x, y, **kw)
    return curve


def test_verl_val_core_and_val_aux_at_their_steps():
    curve = _curve("verl_issue2060.log", "step", "val-core/openai/gsm8k/acc/mean@1")
    assert list(curve.x) == [0] and list(curve.y) == [0.508]
    aux = _curve("verl_issue2060.log", "step", "val-aux/openai/gsm8k/reward/mean@1")
    assert list(aux.y) == [0.565]


def test_verl_behind_rays_task_runner_prefix():
    curve = _curve("verl_awesome_ml_sys_issue106.log", "step", "val-core/openai/gsm8k/reward/mean@1")
    assert list(curve.x) == [80] and list(curve.y) == [0.827]
    # The paste wrapped the line mid-key ('- c' / 'ritic/returns/min:0.000 - ...'): what follows the wrap is
    # the same step's (it was lost, its timers with it).
    assert list(_curve("verl_awesome_ml_sys_issue106.log", "step", "critic/returns/min").y) == [0.0]
    assert list(_curve("verl_awesome_ml_sys_issue106.log", "step", "timing_s/reward", bounded=False).y) == [1.036]


def test_verl_step_lines_hard_wrapped_mid_item_are_joined():
    """rLLM's verl (March 2025): step lines the paste wrapped at ``prompt_length/max:`` / ``265.000 - ...``
    and ``prompt_length/max`` / ``:448.000 - ...``. Read apart, the cut metric was text and every metric after
    the wrap was lost (step 7's ``timing_s/step`` among them)."""
    name = "rllm_verl_issue54.log"
    assert list(_curve(name, "step", "prompt_length/max", bounded=False).x) == [1, 7]
    assert list(_curve(name, "step", "prompt_length/max", bounded=False).y) == [265.0, 448.0]
    assert list(_curve(name, "step", "prompt_length/min", bounded=False).y) == [40.0, 36.0]
    timed = _curve(name, "step", "timing_s/step", bounded=False)  # (step 1's was trimmed from the sample)
    assert list(timed.x) == [7] and list(timed.y) == [122.367]
    # The evaluation before training: the quoted 'Initial validation metrics' dict and the step-0 line, once.
    evaluation = _curve(name, "step", "val/test_score/")
    assert list(evaluation.x) == [0] and list(evaluation.y) == [0.0]


def test_trl_printed_dicts_by_epoch():
    curve = _curve("trl_issue3452.log", "epoch", "reward", bounded=False)
    assert np.allclose(curve.x, [0.31, 0.33, 0.37])
    assert np.allclose(curve.y, [1.7171093285083772, 1.8844376266002656, 1.968537563085556])


def test_nemo_rl_validation_of_a_named_set():
    curve = _curve("nemo_rl_dpo_nemo_platform_pr901.log", "step", "validation-default/accuracy")
    assert list(curve.x) == [2] and list(curve.y) == [1.0]


def test_prime_rl_console_before_june_2026_steps():
    """prime-rl's step line before its orchestrator refactor (PrimeIntellect-ai/prime-rl f6563ff0e):
    ``Step N | Time: 73.77s | Reward: 0.3887 | ...`` -- read as no log at all before."""
    curve = _curve("primerl_pr1318.log", "cum:time/step", "train/reward")
    assert list(curve.x) == pytest.approx([73.77, 73.77 + 72.73, 73.77 + 72.73 + 79.39])
    assert list(curve.y) == [0.3887, 0.4018, 0.3743]
    steps = _curve("primerl_pr2280.log", "step", "train/seq_length", bounded=False)
    assert list(steps.x) == [9, 10] and list(steps.y) == [331.1, 332.0]


def test_prime_rl_evaluations_before_june_2026_take_the_step_named_before_them(tmp_path):
    """An evaluation line of that console names no step: it is the one ``Running evals ...`` named.
    (The evaluation lines are written from the f-string of src/prime_rl/orchestrator/envs.py at
    prime-rl f6563ff0e^ -- no public log held one; the step lines are primerl_pr2280.log's.)"""
    steps = (SAMPLES / "primerl_pr2280.log").read_text(encoding="utf-8").splitlines()
    evaluated = ("SUCCESS Evaluated gsm8k in 12.50s (Avg@4=0.5123, Pass@1: 0.5123, Pass@2: 0.6010, No-response: 0.0%, "
                 "Completion Length: 345.20 (±80.10, ∈[12.00, 1024.00]), Truncated: 1.2%)")
    lines = ["00:27:00    INFO Running evals for checkpoint step 0", f"00:27:01 {evaluated.replace('0.5123', '0.4000')}",
             *steps[:5], "00:27:06    INFO Running evals at step=10 for gsm8k", f"00:27:07 {evaluated}", *steps[5:],
             "00:30:00    INFO Running final evals", f"00:30:09 {evaluated.replace('0.5123', '0.6000')}"]
    log = tmp_path / "orchestrator.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    curve = _curve(log, "step", "eval/gsm8k/avg@4")
    assert list(curve.x) == [0, 10, 10] and list(curve.y) == [0.4, 0.5123, 0.6]
    same = _curve(log, "step", "eval/gsm8k/reward")
    assert list(same.y) == list(curve.y)
    (row,) = [r for r in _rows(log) if r.get("eval/gsm8k/pass@2")][:1]
    assert row["eval/gsm8k/is_truncated/mean"] == pytest.approx(0.012) and row["eval/gsm8k/completion_len/mean"] == 345.2


def _rows(path):
    from scalerl.curves.primerl_log import read_primerl_rows
    return read_primerl_rows(path)[0]


def test_prime_rl_step_line_cut_off_is_skipped():
    from scalerl.curves.primerl_legacy import step_row
    line = "Step 28 | Time: 73.77s | Reward: 0.3887 | Throughput: 2408.9 tokens/s | Seq. Length: 345.6 tokens/sample"
    assert step_row(line)[1] is not None  # (July 2025: the line ended there)
    assert step_row(line + " | Async Level: 1 | Max. Off-Policy Level: 0")[1]["train/max_off_policy_level"] == 0
    assert step_row(line + " | Async Lev") == (True, None)


def test_slime_perf_line_behind_ray_and_its_logger():
    curve = _curve("slime_issue1837.log", "rollout_id", "perf/rollout_time", bounded=False)
    assert list(curve.x) == [0] and list(curve.y) == [371.1796889305115]


@pytest.mark.parametrize("name", ["msswift_issue4146.log", "msswift_issue9261.jsonl"])
def test_ms_swift_progress_text_gives_step_and_wall_time(name):
    """ms-swift writes its step only as ``'global_step/max_steps': '78/176'`` and its clock as
    ``'elapsed_time': '1h 54m 53s'``: neither --x step nor a wall-clock x could be read."""
    y = "rewards/accuracies" if name.endswith(".log") else "entropy/mean"
    steps, hours = {"msswift_issue4146.log": ([78, 79], [(1 * 3600 + 54 * 60 + 53) / 3600, (1 * 3600 + 56 * 60 + 20) / 3600]),
                    "msswift_issue9261.jsonl": ([1, 2], [36 / 3600, 39 / 3600])}[name]
    by_step, by_clock = _curve(name, "step", y), _curve(name, "wall_time", y)
    assert list(by_step.x) == steps and "x step: from 'global_step/max_steps'" in by_step.notes
    np.testing.assert_allclose(by_clock.x, hours)
    assert any("from 'elapsed_time'" in n for n in by_clock.notes)


def test_trl_ppo_trainer_dicts_by_episode():
    curve = _curve("trl_ppo_hongbomiao_pr37684.log", "episode", "objective/scores", bounded=False)
    assert list(curve.x) == [816, 832, 960, 976]
    assert list(curve.y) == [1.6328125, 1.6796875, 2.265625, 1.703125]
    by_epoch = _curve("trl_ppo_hongbomiao_pr37684.log", "epoch", "objective/rlhf_reward", bounded=False)
    assert np.allclose(by_epoch.x, [0.91, 0.92, 1.07, 1.08])
    assert np.allclose(by_epoch.y, [1.1074223518371582, 1.1153466701507568, 1.7084589004516602, 1.116663932800293])


def test_unsloth_notebook_table_pasted_as_markdown():
    """The notebook's table as GitHub holds it: ``Step | Training Loss | reward ...`` over ``-- | -- ...``
    -- the delimiter row was read as the first row ("'--' is not a number")."""
    curve = _curve("unsloth_grpo_issue2291.txt", "Step", "reward", bounded=False)
    assert list(curve.x) == list(range(1, 12))
    assert list(curve.y) == [-17.25, -10.5, 0.0, -18.75, -4.0, -17.25, -13.75, 7.5, -3.0, -11.5, -17.25]
    part = _curve("unsloth_grpo_issue2291.txt", "Step", "rewards / match_format_approximately", bounded=False)
    assert list(part.y[:3]) == [-1.25, -0.5, -2.0]


def test_markdown_table_with_outer_pipes_and_aligned_rule(tmp_path):
    """The same Markdown table as most editors write it: ``| a | b |`` lines, ``|---:|:---|`` rule."""
    table = tmp_path / "evals.md"
    table.write_text("| step | acc |\n|---:|:---|\n| 10 | 0.5 |\n| 20 | 0.6 |\n| 30 | 0.7 |\n", encoding="utf-8")
    (curve,) = read_curves(table, "step", "acc")
    assert list(curve.x) == [10, 20, 30] and list(curve.y) == [0.5, 0.6, 0.7]


@pytest.mark.parametrize("name, keys, values", [
    ("unsloth_gspo_issue3485.log", 21, {"reward": 4.0, "epoch": 0.01, "loss": 0.0, "kl": 0.0,
                                        "rewards/json_format_reward_func/mean": 1.0, "num_tokens": 83968.0}),
    ("video_r1_grpo_issue86.log", 13, {"reward": 0.0, "epoch": 0.09, "temporal_rewards": 0.9167,
                                       "grad_norm": 1.9272357593331177}),
])
def test_a_printed_dict_over_several_lines_is_one_row(name, keys, values):
    """A dict broken over lines (pretty-printed a key per line, or a paste broken at its commas): no row was
    read from it at all."""
    from scalerl.curves.dict_lines_log import read_dict_lines_rows
    rows, notes = read_dict_lines_rows(SAMPLES / name)
    (row,) = rows
    assert len(row) == keys and {k: row[k] for k in values} == values and not notes
    curve = _curve(name, "epoch", "reward", fmt="dict-lines", bounded=False)
    assert list(curve.x) == [values["epoch"]] and list(curve.y) == [values["reward"]]


@pytest.mark.parametrize("name, steps, losses", [
    ("torchtune_pr1358.log", list(range(1, 13)), [2.085338592529297, 1.8718312978744507, 1.1732845306396484]),
    ("torchtune_pr640.log", list(range(0, 11)), [1.7535516023635864, 1.5729001760482788, 0.9040272831916809]),
])
def test_torchtune_stdout_lines(name, steps, losses):
    curve = _curve(name, "step", "loss", bounded=False)
    assert list(curve.x) == steps and list(curve.y[:3]) == losses


def test_mlx_lm_lora_console_train_and_val_reports():
    """mlx-lm on CUDA (July 2025): the validation before training (``Iter 1``: 0 iterations, 0 tokens) and five
    training reports -- read as no log at all before."""
    val = _curve("mlx_lm_pr330.log", "trained_tokens", "val_loss", bounded=False)
    assert list(val.x) == [0.0] and list(val.y) == [2.936]
    train = _curve("mlx_lm_pr330.log", "trained_tokens", "train_loss", bounded=False)
    assert list(train.x) == [3290, 6568, 9669, 12807, 16150]
    assert list(train.y) == [2.662, 2.101, 1.781, 1.505, 1.585]
    assert list(_curve("mlx_lm_pr330.log", "step", "peak_memory", bounded=False).y) == [9.707] + [10.588] * 4


def test_mlx_lm_validations_before_each_update_with_their_tokens_interpolated():
    """mlx-lm 0.22 (March 2025), a report and a validation every 5 iterations: ``Iter 5: Val`` is printed before
    iteration 5's update (4 trained); its tokens lie between the reports at 0 and 5. ``Peak58.946 GB`` (that
    version's typo) is still the peak memory."""
    by_step = _curve("mlx_lm_issue18.log", "step", "val_loss", bounded=False)
    assert list(by_step.x) == [0, 4, 9, 14, 19] and list(by_step.y) == [3.77, 3.044, 2.526, 2.368, 2.094]
    by_tokens = _curve("mlx_lm_issue18.log", "trained_tokens", "val_loss", bounded=False)
    assert list(by_tokens.x) == pytest.approx([0, 8557 * 4 / 5, 8557 + (17373 - 8557) * 4 / 5,
                                               17373 + (27571 - 17373) * 4 / 5, 27571 + (35004 - 27571) * 4 / 5])
    assert any("4 validation(s) fall between 'Trained Tokens' reports" in n for n in by_tokens.notes)
    assert list(_curve("mlx_lm_issue18.log", "step", "peak_memory", bounded=False).y) == [56.494, 58.946, 65.006, 65.006]


def test_mlx_lm_orpo_reports_name_their_preference_metrics():
    val = _curve("mlx_lm_orpo_pr6.log", "step", "val_accuracy")
    assert list(val.x) == [0, 49] and list(val.y) == [1.0, 1.0]
    margin = _curve("mlx_lm_orpo_pr6.log", "step", "margin")
    assert list(margin.x) == [10, 20, 30, 40, 50] and list(margin.y) == [0.021, 0.027, 0.016, 0.028, 0.071]
    chosen = _curve("mlx_lm_orpo_pr6.log", "step", "val_chosen_reward", bounded=False)
    assert list(chosen.y) == [-0.24, -0.25]


def test_trl_dpo_trainer_dicts():
    """TRL's DPOTrainer (2023, 2024): training dicts and an evaluation dict, by epoch."""
    train = _curve("trl_dpo_pr570.log", "epoch", "rewards/margins", bounded=False)
    assert list(train.x) == [0.16, 0.24] and list(train.y) == [0.2992585599422455, 0.41145211458206177]
    evaluation = _curve("trl_dpo_pr570.log", "epoch", "eval_rewards/accuracies")
    assert list(evaluation.x) == [0.2] and list(evaluation.y) == [0.45192307233810425]
    # Three dicts at the same printed epoch (rounded to 0.05): three points, in order.
    same = _curve("trl_dpo_issue1236.log", "epoch", "rewards/accuracies")
    assert list(same.x) == [0.05] * 3 and list(same.y) == [1.0, 0.0, 0.5]


def test_open_r1_grpo_dicts_after_the_issues_text():
    curve = _curve("open_r1_grpo_issue255.log", "epoch", "rewards/accuracy_reward")
    assert list(curve.x) == [0.01, 0.02] and list(curve.y) == [0.15982143627479672, 0.1178571494296193]
    length = _curve("open_r1_grpo_issue255.log", "epoch", "completion_length", bounded=False)
    assert list(length.y) == [387.50359020233157, 378.24644565582275]


def test_llamafactory_trainer_log_by_step_and_by_its_printed_timedelta_clock():
    """LLaMA-Factory's ``trainer_log.jsonl`` (September 2023): ``current_steps``, nulls for what the step did
    not log, and the clock as Python prints a ``timedelta`` (``"elapsed_time": "5:13:22"``). That clock was
    offered as ``wall_time`` but never read ("no rows with finite 'wall_time'", every row dropped)."""
    name = "llamafactory_trainer_log_issue774.jsonl"
    curve = _curve(name, "current_steps", "loss", bounded=False)
    assert list(curve.x) == [3200, 3210, 3220, 3230] and list(curve.y) == [4.4671, 4.4577, 4.4458, 4.4598]
    assert curve.dropped == 1  # the last row: "loss": null
    clock = _curve(name, "wall_time", "loss", bounded=False)
    np.testing.assert_allclose(clock.x, [(5 * 3600 + m * 60 + s) / 3600 for m, s in ((13, 22), (14, 24), (15, 22), (16, 20))])
    assert any("from 'elapsed_time'" in n for n in clock.notes)
    with pytest.raises(InputError, match=r"elapsed_time value '5:13:22' \(row 1\) is not a number -- 'elapsed_time' holds a "
                                         r"duration: --x wall_time reads it, in hours"):
        _curve(name, "elapsed_time", "loss", bounded=False)  # ("at step ?" before, and "fix the value")


def test_a_column_every_row_leaves_null_is_not_offered_in_the_listing():
    """The listing without --x / --y offered LLaMA-Factory's ``eval_loss``, ``predict_loss`` and ``reward``
    (null on every training row) as metrics, and the read then found no point in them."""
    from scalerl.curves.io import log_columns

    cols = log_columns(SAMPLES / "llamafactory_trainer_log_issue774.jsonl")
    assert "loss" in cols and "wall_time" in cols
    assert not {"eval_loss", "predict_loss", "reward"} & set(cols)


@pytest.mark.parametrize("text, seconds", [("5:13:22", 18802.0), ("0:00:29.5", 29.5), ("1 day, 2:03:04", 93784.0),
                                           ("3 days, 0:00:00", 259200.0), ("1h 1m 32s", 3692.0), ("12:60:00", None)])
def test_elapsed_time_as_a_printed_timedelta_or_ms_swifts_units(text, seconds):
    from scalerl.curves.progress_columns import duration_seconds
    assert duration_seconds(text) == seconds


def test_deepspeed_chat_rlhf_steps_and_their_reward_lines():
    """DeepSpeed-Chat's step 3 (June 2023): ``epoch: 0|step: 259|ppo_ep: 1|act_loss: ...`` then ``average reward
    score: ...`` -- read as no log at all before (a .txt of it: one CSV column named after the first line)."""
    name = "deepspeed_chat_issue586.log"
    curve = _curve(name, "global_step", "average_reward_score")
    assert list(curve.x) == [259, 260, 261, 262, 263, 264]
    assert list(curve.y) == [0.20556640625, 0.205810546875, 0.2064208984375, 0.2059326171875, 0.20654296875,
                             0.2060546875]
    loss = _curve(name, "step", "act_loss", bounded=False)
    assert list(loss.y[:3]) == [0.0253753662109375, 0.1915283203125, -0.1837158203125] and loss.y[-1] == 0.10009765625


def test_mlx_examples_grpo_one_line_reports_name_each_reward_function():
    name = "mlx_examples_grpo_pr1233.log"
    speed = _curve(name, "step", "tokens_per_second", bounded=False)
    assert list(speed.x) == [7, 8] and list(speed.y) == [204.607, 205.690]
    reward = _curve(name, "step", "r1_accuracy_reward_func_mean")
    assert list(reward.y) == [0.0, 0.0]
    assert list(_curve(name, "step", "learning_rate", bounded=False).y) == [1e-05, 1e-05]


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if p.name != "README.md"))
def test_each_sample_with_windows_line_ends_reads_as_the_sample(tmp_path, name):
    """``\\r\\n`` line ends (a log saved on Windows, or ``docker logs`` of a container run with ``-t``): the
    printed-dict consoles (ms-swift's, TRL's, OpenRLHF's) read every line's end as a progress bar's redraw,
    an empty line after it, and found no dict -- "a text log without ..."."""
    crlf = tmp_path / SAMPLES.name / name  # (in a directory of the same name: a JSON-lines run is named after it)
    crlf.parent.mkdir()
    crlf.write_bytes((SAMPLES / name).read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    assert detect_format(crlf) == detect_format(SAMPLES / name)
    columns = log_columns(SAMPLES / name)
    assert log_columns(crlf) == columns
    x = next(c for c in ("step", "iteration", "epoch", "episode", "rollout_id", "current_steps", "Step") if c in columns)
    for y in [c for c in columns if c != x][:5]:
        try:
            want = read_curves(SAMPLES / name, x, y, bounded=False)
        except InputError:
            continue
        got = read_curves(crlf, x, y, bounded=False)
        assert [(c.name, list(c.x), list(c.y)) for c in got] == [(c.name, list(c.x), list(c.y)) for c in want]


def test_a_resumed_llamafactory_trainer_log_is_split_by_its_current_steps(tmp_path):
    """A training resumed from checkpoint-50 appends to ``trainer_log.jsonl``: ``current_steps`` goes back
    from 100 to 60. Read by that counter, as a ``step`` key is, the abandoned attempt's rows from 60 on go,
    said in the notes (before, only ``step`` was such a counter: ``--x current_steps`` was refused as a
    compute that decreases)."""
    import json

    def row(s, loss):  # the shape of the real sample's rows (issue 774)
        return {"current_steps": s, "total_steps": 300, "loss": loss, "learning_rate": 5e-05, "epoch": s / 100,
                "percentage": s / 3, "elapsed_time": f"0:{s // 10:02d}:00", "remaining_time": "0:10:00"}

    first = [row(s, 4.5 - 0.001 * s) for s in range(10, 101, 10)]
    resumed = [row(s, 4.4 - 0.001 * s) for s in range(60, 151, 10)]
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in first + resumed))
    (curve,) = read_curves(path, "current_steps", "loss", bounded=False)
    assert list(curve.x) == list(range(10, 151, 10))
    np.testing.assert_allclose(curve.y[5:], [4.4 - 0.001 * s for s in range(60, 151, 10)])  # the resumed attempt's
    assert any("resumes from a checkpoint 1 time(s) (current_steps goes back): 5 row(s)" in n for n in curve.notes)
