"""NeMo-RL's console and validation dumps (what its example configs leave: every tracker is off),
as NeMo-RL prints and writes them (tests/curves/data/make_nemo_rl_logs.py), fed the shipped verl
run's scores."""

import csv
import gzip
import json
import tarfile

import numpy as np
import pytest

from scalerl.curves import read_curve, read_curves
from scalerl.curves.io import detect_format, log_columns
from scalerl.curves.nemo_rl_log import _key
from scalerl.errors import InputError

from .conftest import REAL_CSV

DATA = __import__("pathlib").Path(__file__).parent / "data"
RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
ACC = "validation/accuracy"


def _real() -> tuple[list[int], list[float], list[float]]:
    """NeMo-RL steps, hours and scores of the run the fixtures were fed."""
    with open(REAL_CSV) as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == RUN]
    return ([int(r["step"]) + 1 for r in rows], [float(r["cum_wall_hours"]) for r in rows],
            [float(r["val_score"]) for r in rows])


def _console(tmp_path, name="nemo_rl_console", edit=None):
    text = gzip.decompress((DATA / f"{name}.log.gz").read_bytes()).decode()
    if edit:
        text = edit(text)
    path = tmp_path / f"{name}.log"
    path.write_text(text)
    return path


def _logs(tmp_path):
    with tarfile.open(DATA / "nemo_rl_logs.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "logs"


def test_a_nemo_rl_console_is_recognised_and_read_as_the_run_it_printed(tmp_path):
    path = _console(tmp_path)
    assert detect_format(path) == "nemo-rl"  # not dict-lines, though it opens with the config's pprint
    steps, hours, scores = _real()
    c = read_curve(path, "step", ACC)
    assert c.x.tolist() == steps and np.allclose(c.y, scores, atol=5e-5)  # 4 decimals printed
    # Each step's seconds summed: the run's training time at every validation (printed to 0.01 s).
    t = read_curve(path, "cum:timing/train/total_step_time", ACC)
    assert np.allclose(t.x, np.array(hours) * 3600, atol=0.005 * steps[-1] + 1e-9)
    train = read_curve(path, "step", "train/reward")
    assert len(train.x) == steps[-1] and train.x[0] == 1  # a training row per step, from step 1
    assert read_curve(path, "step", "timing/validation/total_validation_time", bounded=False).x.tolist() == steps
    loss = read_curve(path, "step", "train/loss", bounded=False)
    assert loss.y.min() < 0  # signed values read as printed
    assert not c.notes


def test_a_console_appended_to_by_a_resumed_training_keeps_the_run_that_went_on(tmp_path):
    path = _console(tmp_path, "nemo_rl_console_resumed")
    steps, _, scores = _real()
    c = read_curve(path, "step", ACC)
    want = {s: v for s, v in zip(steps, scores) if s <= 200}
    assert c.x.tolist() == sorted(want)
    # The first process's step-110 validation (0.05 lower) was abandoned with it.
    assert np.allclose(c.y, [want[s] for s in sorted(want)], atol=5e-5)
    assert any("resumes from a checkpoint 1 time" in n for n in c.notes)
    # The abandoned attempt's training rows after the checkpoint went too: one row per step.
    assert read_curve(path, "step", "train/reward").x.tolist() == list(range(1, 201))


def test_a_training_started_over_in_the_same_console_is_a_run_of_its_own(tmp_path):
    whole = gzip.decompress((DATA / "nemo_rl_console.log.gz").read_bytes()).decode()
    path = _console(tmp_path, edit=lambda t: t + whole[: whole.index("Step 60/500")])
    curves = read_curves(path, "step", ACC)
    assert [c.name for c in curves] == ["nemo_rl_console#1", "nemo_rl_console#2"]
    assert curves[1].x.tolist() == [0, 10, 20, 30, 40, 50]


def test_a_console_cut_while_a_step_printed_keeps_what_it_printed_and_says_so(tmp_path):
    def cut(text):
        return text[: text.rindex("\n", 0, text.index("Training Results", text.index("Step 300/500")))]

    c = read_curve(_console(tmp_path, edit=cut), "step", ACC)
    assert c.x[-1] == 300  # its validation had printed
    assert any("step 300 has no 'Training Results'" in n for n in c.notes)


def test_a_console_that_lost_its_emoji_and_carries_ray_prefixes_reads_the_same(tmp_path):
    def strip(text):
        lines = text.encode("ascii", "replace").decode().splitlines()
        return "\n".join(f"(grpo_driver pid=17) {line}" if line.strip() else line for line in lines)

    path = _console(tmp_path, edit=strip)
    assert detect_format(path) == "nemo-rl"
    steps, _, scores = _real()
    c = read_curve(path, "step", ACC)
    assert c.x.tolist() == steps and np.allclose(c.y, scores, atol=5e-5)


def test_printed_labels_take_the_names_nemo_rl_logs_them_under():
    assert _key("train", "Avg Reward") == "train/reward"
    assert _key("train", "Avg Total Reward") == "train/reward"  # dynamic sampling: the unfiltered mean
    assert _key("train", "Avg Filtered Reward") == "train/filtered_reward"
    assert _key("validation", "Average response length") == "validation/avg_length"
    assert _key("validation", "Validation loss") == "validation/loss"  # NeMo-RL's SFT / DPO
    assert _key("timing/train", "Total step time") == "timing/train/total_step_time"
    assert _key("timing/train", "policy_training") == "timing/train/policy_training"  # a timer as named


def test_validation_dumps_read_at_full_precision_and_a_resumed_launch_joins_its_run(tmp_path):
    logs = _logs(tmp_path)
    assert detect_format(logs) == detect_format(logs / "exp_001") == "eval-dumps"
    steps, _, scores = _real()
    want = {s: v for s, v in zip(steps, scores)}
    curves = {c.name: c for c in read_curves(logs, "step", ACC)}
    assert list(curves) == ["exp_001", "exp_003"]
    run = curves["exp_001"]  # exp_002 resumed it from the step-100 checkpoint
    assert run.x.tolist() == list(range(0, 201, 10))
    assert np.allclose(run.y, [want[s] for s in range(0, 201, 10)], atol=1e-12)  # 110: the resumed launch's
    assert any("exp_002 resumes exp_001" in n and "1 validation(s)" in n for n in run.notes)
    assert curves["exp_003"].x.tolist() == [0, 10, 20, 30, 40, 50]
    alone = read_curve(logs / "exp_002", "step", ACC)
    assert alone.name == "exp_002" and alone.x.tolist() == list(range(110, 201, 10))
    assert read_curve(logs / "exp_002", "step", "samples", bounded=False).y.tolist() == [1000] * 10


def test_dumps_beside_nemo_rls_tensorboard_read_as_dumps_and_name_it_for_the_timers(tmp_path):
    """With NeMo-RL's TensorBoard on, logs/exp_<NNN> holds the dumps and tensorboard/: the directory
    reads as the dumps; a column only the tracker has (its timers) is refused naming the tracker's
    directory, which reads with --x cum: over its per-step seconds."""
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    exp = _logs(tmp_path) / "exp_003"
    w = SummaryWriter(str(exp / "tensorboard"))
    for step in range(0, 51):
        if step:
            w.add_scalar("timing/train/total_step_time", 30.0, step)
        if step % 10 == 0:
            w.add_scalar(ACC, 0.3 + 0.004 * step, step)
    w.close()
    assert read_curve(exp, "step", ACC).x.tolist() == [0, 10, 20, 30, 40, 50]  # the dumps
    with pytest.raises(InputError, match=r"also holds tracker logs.*exp_003/tensorboard"):
        read_curve(exp, "cum:timing/train/total_step_time", ACC)
    timed = read_curve(exp / "tensorboard", "cum:timing/train/total_step_time", ACC)
    assert timed.x.tolist() == [0.0, 300.0, 600.0, 900.0, 1200.0, 1500.0]
    assert timed.name == "exp_003"  # named after the launch, as the dumps reader names it


def test_the_console_and_the_dumps_of_one_run_agree(tmp_path):
    console = read_curve(_console(tmp_path, "nemo_rl_console_resumed"), "step", ACC)
    dumps = read_curve(_logs(tmp_path), "step", ACC, run="exp_001")
    assert console.x.tolist() == dumps.x.tolist()
    assert np.abs(console.y - dumps.y).max() <= 5e-5


def test_damaged_validation_dumps_are_noted_or_refused_in_one_line(tmp_path):
    exp = _logs(tmp_path) / "exp_003"
    with open(exp / "val_data_step50.jsonl", "a") as f:
        f.write('{"content": [[{"role": "user", "cont')  # killed while it wrote
    c = read_curve(exp, "step", ACC)
    assert c.x[-1] == 50 and any("torn last line" in n for n in c.notes)
    (exp / "val_data_step60.jsonl").write_text("")
    c = read_curve(exp, "step", ACC)
    assert c.x[-1] == 50 and any("val_data_step60.jsonl holds no samples" in n for n in c.notes)
    lines = (exp / "val_data_step20.jsonl").read_text().splitlines()
    lines[4] = json.dumps({"content": [], "rewards": ["tensor([1.])"], "idx": 4})
    (exp / "val_data_step20.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"val_data_step20.jsonl:5: 'rewards' is \['tensor"):
        read_curves(exp, "step", ACC)


def test_a_validation_with_several_samples_a_prompt_gives_pass_k(tmp_path):
    """``val_num_generations_per_prompt: 4``: a prompt's samples are consecutive lines (NeMo-RL's
    pass_k is ``(rewards.view(-1, 4) > 0).any(1).mean()``)."""
    exp = tmp_path / "exp_001"
    exp.mkdir()
    for step, hits in ((0, [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]), (10, [1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1])):
        with open(exp / f"val_data_step{step}.jsonl", "w") as f:
            for i, r in enumerate(hits):
                log = [{"role": "user", "content": f"prompt {i // 4}"}, {"role": "assistant", "content": "..."}]
                f.write(json.dumps({"content": [log], "rewards": [float(r)], "idx": i}) + "\n")
    assert read_curve(exp, "step", "validation/pass_k").y.tolist() == [1 / 3, 1.0]
    assert read_curve(exp, "step", ACC).y.tolist() == [1 / 12, 4 / 12]
    # One sample a prompt (the fixture's dumps): no pass_k.
    assert "validation/pass_k" not in log_columns(_logs(tmp_path / "x") / "exp_003")


def _in_epochs(text: str, per_epoch: int) -> str:
    """The console as NeMo-RL since 2025-09 prints it: ``===== Epoch E/K =====`` before each epoch and ``Step N/M``
    counted from 1 within it (its validations and checkpoints still print the step across epochs)."""
    import re

    def header(m):
        step = int(m.group(1))
        epoch, n = divmod(step - 1, per_epoch)
        opening = f"\n{'=' * 25} Epoch {epoch + 1}/3 {'=' * 25}\n" if n == 0 else ""
        return f"{opening}{'=' * 25} Step {n + 1}/{per_epoch} {'=' * 25}"

    return re.sub(r"={25} Step (\d+)/500 ={25}", header, text)


def test_a_console_of_several_epochs_reads_as_one_run_at_the_steps_nemo_rl_logs(tmp_path):
    """NeMo-RL restarts ``Step N`` at 1 each epoch but logs the step across epochs: every epoch read as a training
    started over (a run of its own) and the validations as rows of no step printed."""
    plain = read_curve(_console(tmp_path), "step", ACC)
    path = _console(tmp_path, "nemo_rl_console", edit=lambda t: _in_epochs(t, 150))
    assert "Epoch 3/3" in path.read_text() and "Step 150/150" in path.read_text()
    (c,) = read_curves(path, "step", ACC)
    assert c.x.tolist() == plain.x.tolist() and np.allclose(c.y, plain.y) and not c.notes
    assert read_curve(path, "step", "train/reward").x.tolist() == list(range(1, int(plain.x[-1]) + 1))


def test_a_console_that_begins_inside_an_epoch_takes_its_steps_from_the_first_validation(tmp_path):
    """A relaunch's own console (not appended to) starts in epoch 2 at ``Step 21/150``: its steps across epochs
    (171, ...) are told by the first validation it prints (at step 180, its ``Step 30``)."""
    whole = _in_epochs(gzip.decompress((DATA / "nemo_rl_console.log.gz").read_bytes()).decode(), 150)
    head = whole[: whole.index("\n", whole.index("SETUP COMPLETE") + 40)]
    epoch = f"\n{'=' * 25} Epoch 2/3 {'=' * 25}\n"
    path = tmp_path / "relaunch.log"
    path.write_text(head + epoch + whole[whole.index(f"{'=' * 25} Step 21/150", whole.index(epoch)):])
    train = read_curve(path, "step", "train/reward")
    assert train.x[0] == 171 and train.x.tolist() == list(range(171, int(train.x[-1]) + 1))
    assert read_curve(path, "step", ACC).x[0] == 180


def test_a_console_of_several_epochs_appended_to_by_a_resume_keeps_the_run_that_went_on(tmp_path):
    """The resumed process prints its epoch's header again (epoch 3 of 50 steps, from the step-100 checkpoint)."""
    plain = read_curve(_console(tmp_path, "nemo_rl_console_resumed"), "step", ACC)
    path = _console(tmp_path, "nemo_rl_console_resumed", edit=lambda t: _in_epochs(t, 50))
    assert path.read_text().count("Epoch 3/3") == 2
    c = read_curve(path, "step", ACC)
    assert c.x.tolist() == plain.x.tolist() and np.allclose(c.y, plain.y)
    assert any("resumes from a checkpoint 1 time" in n for n in c.notes)
    assert read_curve(path, "step", "train/reward").x.tolist() == list(range(1, 201))


# --- review ec: consoles of several epochs as NeMo-RL prints them, built line by line ---

BAR = "=" * 25


def _epoch(e: int, k: int) -> str:
    # nemo_rl/algorithms/grpo.py grpo_train: print(f"\n{'=' * 25} Epoch {current_epoch + 1}/{max_num_epochs} ...")
    return f"\n{BAR} Epoch {e}/{k} {BAR}\n"


def _step(n: int, m: int, reward: float, *, validation: tuple[int, float] | None = None) -> str:
    # grpo_train: print(f"\n{'=' * 25} Step {current_step + 1}/{min(len(wrapped_dataloader), max_num_steps)} ...")
    # -- current_step counted within the epoch, total_steps (what the trackers get) across epochs.
    text = f"\n{BAR} Step {n}/{m} {BAR}\n▶ Preparing batch...\n"
    if validation is not None:
        text += (f"▶ Starting validation at step {validation[0]}...\n\n📊 Validation Results:\n"
                 f"    • Accuracy: {validation[1]:.4f}\n\n")
    return (text + f"\n📊 Training Results:\n  • Loss: 0.0100\n  • Avg Reward: {reward:.4f}\n\n"
            "⏱️  Timing:\n  • Total step time: 10.00s\n")


def _write_console(tmp_path, text: str, name: str = "nemo.log"):
    path = tmp_path / name
    path.write_text("SETUP COMPLETE\n" + text)
    return path


def test_console_beginning_inside_an_epoch_without_validations_is_one_run_at_the_logged_steps(tmp_path):
    """A relaunch's own console (not appended to), 3 steps an epoch, beginning at epoch 2's step 2, with no
    validation or checkpoint line (val_period 0, checkpointing off). NeMo-RL logs total_steps + 1 =
    (epoch - 1) * M + N (M = min(len(dataloader), max_num_steps): a second epoch exists only where M is the
    dataloader's length)."""
    text = (_epoch(2, 3) + _step(2, 3, 0.2) + _step(3, 3, 0.3)
            + _epoch(3, 3) + _step(1, 3, 0.4) + _step(2, 3, 0.5) + _step(3, 3, 0.6))
    curves = read_curves(_write_console(tmp_path, text), "step", "train/reward")
    assert len(curves) == 1, [(c.name, c.x.tolist(), c.notes) for c in curves]  # today: nemo#1 [2, 3], nemo#2 [1, 2, 3]
    assert curves[0].x.tolist() == [5, 6, 7, 8, 9]


def test_validation_only_at_the_end_tells_the_steps_of_the_earlier_epoch_too(tmp_path):
    """The same relaunched console with one validation, at the end (val_at_end, step 9 across epochs): epoch 2's rows
    stayed at their within-epoch steps 2, 3 and epoch 3's became 7, 8, 9."""
    text = (_epoch(2, 3) + _step(2, 3, 0.2) + _step(3, 3, 0.3)
            + _epoch(3, 3) + _step(1, 3, 0.4) + _step(2, 3, 0.5) + _step(3, 3, 0.6, validation=(9, 0.7)))
    (c,) = read_curves(_write_console(tmp_path, text), "step", "train/reward")
    assert c.x.tolist() == [5, 6, 7, 8, 9]  # today [2, 3, 7, 8, 9]


def test_second_training_in_one_console_keeps_its_own_epoch_starts(tmp_path):
    """``tee -a``: a training of 3 steps an epoch, then one started over with another batch size (5 steps an epoch).
    The second's ``Epoch 2/2`` took the first's epoch-2 start (3): its steps read 4..8, not 6..10, the step went
    back from 5 to 4, and its steps 4 and 5 were dropped as an abandoned attempt's ("resumes from a checkpoint")."""
    first = "".join(_epoch(e, 2) + "".join(_step(n, 3, 0.1 * n) for n in (1, 2, 3)) for e in (1, 2))
    second = (_epoch(1, 2) + "".join(_step(n, 5, 0.1 * n) for n in range(1, 6))
              + _epoch(2, 2) + "".join(_step(n, 5, 0.5 + 0.05 * n) for n in range(1, 6)))
    curves = read_curves(_write_console(tmp_path, first + "\nSETUP COMPLETE\n" + second), "step", "train/reward")
    assert len(curves) == 2
    assert curves[1].x.tolist() == list(range(1, 11)), (curves[1].x.tolist(), curves[1].notes)
    assert not any("resumes from a checkpoint" in n for n in curves[1].notes)


# --- review ed: dynamic sampling's unfilled passes; a training without epoch headers after one with them ---


def _unfilled(n: int, m: int) -> str:
    """A pass of the dataloader loop under dynamic sampling (DAPO) whose batch did not fill the buffer:
    grpo_train prints the step header, generates, prints dynamic_sampling's two lines, and ``continue``s --
    current_step / total_steps unchanged, so the next pass prints the same ``Step n/m`` header again."""
    return (f"\n{BAR} Step {n}/{m} {BAR}\n▶ Preparing batch...\n▶ Generating responses for batch of size 64...\n"
            "Detected 3 prompts with non-zero std; 8 are required and used for training.\n"
            "Generation sample buffer size: 3 is smaller than train_prompts_size: 8. Processed 1 batches so far "
            "out of 10.\n")


def test_dynamic_sampling_epoch_that_ends_inside_an_unfilled_step_starts_the_next_at_the_last_trained_step(tmp_path):
    """DAPO, 5 batches an epoch, 2 batches a step: epoch 1 trains steps 1 and 2, then its 5th batch leaves step 3
    unfilled and the loop ends (current_step reset, total_steps still 2). Epoch 2's ``Step 1`` is step 3 across
    epochs (its validation prints ``at step 4`` for its ``Step 2``). Today epoch 2 starts at 3 (the unfilled
    header): its Step 1 reads 4, its Step 2 reads 5, the validation's ``step 4`` moves the offset back and the
    step-5 row is dropped as an "abandoned attempt" with a spurious resume note."""
    m = 5
    text = (_epoch(1, 2) + _unfilled(1, m) + _step(1, m, 0.1) + _unfilled(2, m) + _step(2, m, 0.2) + _unfilled(3, m)
            + _epoch(2, 2) + _unfilled(1, m) + _step(1, m, 0.3) + _unfilled(2, m)
            + _step(2, m, 0.4, validation=(4, 0.5)))
    path = _write_console(tmp_path, text)
    (train,) = read_curves(path, "step", "train/reward")
    assert train.x.tolist() == [1, 2, 3, 4], (train.x.tolist(), train.notes)
    assert train.y.tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert not any("resumes from a checkpoint" in n for n in train.notes), train.notes
    (val,) = read_curves(path, "step", "validation/accuracy")
    assert val.x.tolist() == [4]


def test_training_without_epoch_headers_appended_after_a_multi_epoch_training_counts_from_its_own_step_1(tmp_path):
    """``tee -a``: a synchronous GRPO training of 2 epochs x 3 steps (``Epoch E/2`` headers), then a training started
    over with ``async_grpo_train`` (grpo.py prints ``Step {step + 1}/{max_num_steps}`` and no Epoch header) or an
    older NeMo-RL. The second training's ``Step 1/500`` is read as step 3 + 1 = 4 (epoch 2's offset kept): a step
    that goes back into the first training, read as a resume -- the first training's steps 4-6 dropped as an
    abandoned attempt's and the new training's steps shifted by 3, in the first training's run."""
    first = "".join(_epoch(e, 2) + "".join(_step(n, 3, 0.1 * n + 0.3 * e) for n in (1, 2, 3)) for e in (1, 2))
    second = "".join(_step(n, 500, 0.5 + 0.01 * n) for n in range(1, 6))
    curves = read_curves(_write_console(tmp_path, first + "\nSETUP COMPLETE\n" + second), "step", "train/reward")
    got = [(c.name, c.x.tolist(), c.notes) for c in curves]
    assert len(curves) == 2, got
    assert curves[0].x.tolist() == [1, 2, 3, 4, 5, 6], got
    assert curves[1].x.tolist() == [1, 2, 3, 4, 5], got
    assert not any("resumes from a checkpoint" in n for c in curves for n in c.notes), got
