import collections
import random

import pytest

from scalerl.errors import InputError
from scalerl.rl.length import InterruptionController
from scalerl.tasks import get_task
from scalerl.tasks.arithmetic import ArithmeticTask, reference_completion
from scalerl.tasks.arithmetic_mix import ArithmeticMixTask, fits_budget_share, pairs_of_length, thinking_tokens
from scalerl.tasks.base import Problem


def columns_of(p: Problem) -> int:
    return len(str(max(p.meta["a"], p.meta["b"])))


@pytest.fixture(scope="module")
def task():
    return ArithmeticMixTask(n_train=3000, n_val=300, n_per_length=60)


def test_problems_are_additions_with_the_reference_scratchpad(task):
    for p in task.train_problems()[:50] + task.eval_sets()["val"][:50]:
        a, b = p.meta["a"], p.meta["b"]
        assert p.prompt == f"{a}+{b}=" and p.answer == str(a + b) and p.id == f"{a}+{b}"
        assert task.reference_completion(p) == reference_completion(a, b)
        assert task.reward(p, task.reference_completion(p)) == 1.0
        assert task.reward(p, "<think></think>" + str(a + b + 1)) == -1.0


def test_lengths_are_equally_frequent_and_val_is_stratified_and_interleaved(task):
    train = collections.Counter(columns_of(p) for p in task.train_problems())
    assert train == {2: 1000, 3: 1000, 4: 1000}
    val = task.eval_sets()["val"]
    assert collections.Counter(columns_of(p) for p in val) == {2: 100, 3: 100, 4: 100}
    # The first N of val (what eval.problems takes) stay stratified.
    assert [columns_of(p) for p in val[:6]] == [2, 3, 4, 2, 3, 4]
    for d in (2, 3, 4):
        assert {columns_of(p) for p in task.eval_sets()[f"len{d}"]} == {d}


def test_splits_are_disjoint_and_shared_with_the_arithmetic_task(task):
    train_ids = {p.id for p in task.train_problems()}
    assert len(train_ids) == len(task.train_problems())  # no duplicates
    for name, problems in task.eval_sets().items():
        assert problems and not train_ids & {p.id for p in problems}, name
    # A held-out 2-column pair is held out for `arithmetic` too (no warm start saw it).
    two_digit_train = {p.id for p in ArithmeticTask(digits=2).train_problems()}
    assert not two_digit_train & {p.id for p in task.eval_sets()["val"]}


def test_deterministic_per_seed():
    a, b, c = (ArithmeticMixTask(n_train=600, n_val=60, seed=s) for s in (1, 1, 2))
    assert a.train_problems() == b.train_problems() and a.eval_sets() == b.eval_sets()
    assert a.eval_sets()["val"] != c.eval_sets()["val"]


def test_thinking_tokens_match_the_character_tokenizer(char_tokenizer):
    for a, b in [(47, 38), (95, 7), (1, 397), (9999, 9999)]:
        completion = reference_completion(a, b)
        thinking = completion[: completion.index("</think>") + len("</think>")]
        assert len(char_tokenizer(thinking, add_special_tokens=False).input_ids) == thinking_tokens(a, b)
    assert [thinking_tokens(10, 10), thinking_tokens(99, 99)] == [18, 20]


def test_ceiling_by_construction_under_the_real_interruption_controller(task, char_tokenizer):
    """Drive each val problem's reference completion through ScaleRL's forced-interruption state
    machine: the share that ends its thinking naturally is the task's ceiling, below 1."""
    lo, hi = 26, 34  # the cpu-tiny-mix profile's thinking budget
    controller = InterruptionController.from_tokenizer(char_tokenizer, think_budget=(lo, hi), answer_budget=8,
                                                       max_new_tokens=48)
    finished_naturally = 0.0
    val = task.eval_sets()["val"]
    for p in val:
        ids = char_tokenizer(task.reference_completion(p), add_special_tokens=False).input_ids
        for budget in range(lo, hi + 1):  # every budget the controller can draw, equally likely
            state = controller.start(random.Random(0))
            state.think_budget = budget
            for t in ids:
                if state.forced_token() is not None or state.finished:
                    break
                state.observe(t)
            finished_naturally += (not state.interrupted) / (hi - lo + 1)
    ceiling = task.ceiling((lo, hi))
    assert finished_naturally / len(val) == pytest.approx(ceiling, abs=1e-9)
    assert 0.5 < ceiling < 0.7
    # More thinking budget -> a higher ceiling; enough of it -> no ceiling at all.
    caps = [task.ceiling(b) for b in [(18, 26), (26, 34), (34, 42), (38, 46)]]
    assert caps == sorted(caps) and caps[0] < 0.4 and caps[-1] == 1.0


def test_fits_budget_share():
    assert fits_budget_share(10, (10, 20)) == 1.0 and fits_budget_share(21, (10, 20)) == 0.0
    assert fits_budget_share(20, (10, 20)) == pytest.approx(1 / 11)
    assert pairs_of_length(1) == 100 and pairs_of_length(2) == 9900


@pytest.mark.parametrize("settings, match", [
    ({"min_digits": 4, "max_digits": 3}, "min_digits"),
    ({"min_digits": 0}, "min_digits"),
    ({"max_digits": 13}, "max_digits"),
    ({"n_val": 0}, "n_val"),
    ({"n_per_length": -1}, "n_per_length"),
    ({"held_out_fraction": 1.0}, "held_out_fraction"),
    ({"min_digits": 1, "n_val": 1000}, "raise min_digits"),  # 1 column: only ~10 held-out pairs
    ({"verify_scratchpad": "ture"}, "verify_scratchpad: expected true or false, got 'ture'"),
])
def test_bad_settings_are_one_line_input_errors(settings, match):
    with pytest.raises(InputError, match=match) as info:
        get_task("arithmetic-mix", **settings)
    assert "\n" not in str(info.value)


def test_registry_and_unknown_setting():
    task = get_task("arithmetic-mix", n_val=30, n_per_length=0, n_train=300)
    assert task.name == "arithmetic-mix" and list(task.eval_sets()) == ["val"]
    with pytest.raises(InputError, match="digitz"):
        get_task("arithmetic-mix", digitz=2)


def test_bad_task_setting_from_the_command_line_exits_2(warm_tiny_dir, tmp_path, capsys):
    from scalerl.cli import main

    code = main(["train", "--model", str(warm_tiny_dir), "--task", "arithmetic-mix", "--output", str(tmp_path / "o"),
                 "--set", "task.settings={min_digits: 5, max_digits: 3}", "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    # A model directory on a CPU gets the profile note first; the error itself is one line.
    assert "Traceback" not in err and err.splitlines()[-1].startswith("scalerl train: error: arithmetic-mix")


def _completion_under_interruption(task, p, controller, tokenizer, budget):
    """What a perfect scratchpad policy that *also knows the sum* writes under the thinking budget:
    the reference scratchpad, cut and closed by the forced phrase where it does not fit, then the
    right answer (the best any guess could do)."""
    state = controller.start(random.Random(0))
    state.think_budget = budget
    ids = list(tokenizer(task.reference_completion(p).split("</think>")[0] + "</think>",
                         add_special_tokens=False).input_ids)
    out = []
    for t in ids:
        while state.forced_token() is not None:
            out.append(state.forced_token())
            state.observe(out[-1])
        if state.phase.name != "THINKING":
            break
        out.append(t)
        state.observe(t)
    while state.forced_token() is not None:
        out.append(state.forced_token())
        state.observe(out[-1])
    return tokenizer.decode(out) + p.answer, state.interrupted


def test_verify_scratchpad_makes_the_ceiling_a_hard_bound(char_tokenizer):
    """With ``verify_scratchpad`` even a policy that knows every sum cannot pass a problem whose
    scratchpad was cut: its pass rate under the real interruption controller is exactly
    ``ceiling(budget)``. Without it the same policy passes everything (the creep past the cap)."""
    lo, hi = 26, 34
    controller = InterruptionController.from_tokenizer(char_tokenizer, think_budget=(lo, hi), answer_budget=8,
                                                       max_new_tokens=48)
    loose = ArithmeticMixTask(n_train=300, n_val=150, n_per_length=0)
    strict = ArithmeticMixTask(n_train=300, n_val=150, n_per_length=0, verify_scratchpad=True)
    val = strict.eval_sets()["val"]
    assert [p.id for p in val] == [p.id for p in loose.eval_sets()["val"]]
    passed = {"loose": 0.0, "strict": 0.0}
    cut = 0
    for p in val:
        for budget in range(lo, hi + 1):
            text, interrupted = _completion_under_interruption(strict, p, controller, char_tokenizer, budget)
            cut += interrupted
            passed["loose"] += (loose.reward(p, text) > 0) / (hi - lo + 1)
            passed["strict"] += (strict.reward(p, text) > 0) / (hi - lo + 1)
    assert cut > 0
    assert passed["loose"] / len(val) == pytest.approx(1.0)
    assert passed["strict"] / len(val) == pytest.approx(strict.ceiling((lo, hi)), abs=1e-9)


def test_verify_scratchpad_rewards_only_the_complete_right_scratchpad():
    strict = ArithmeticMixTask(n_train=300, n_val=150, n_per_length=0, verify_scratchpad=True)
    p = strict.eval_sets()["val"][0]
    ref = strict.reference_completion(p)
    assert strict.reward(p, ref) == 1.0 and strict.reward(p, "  " + ref + "\n") == 1.0
    think, answer = ref.split("</think>")
    wrong_line = think.replace("+", "-", 1) + "</think>" + answer  # right sum, a wrong scratchpad line
    skipped = "<think>" + think.split("\n", 1)[1] + "</think>" + answer  # right sum, first column not written
    assert strict.reward(p, wrong_line) == -1.0 and strict.reward(p, skipped) == -1.0
    assert ArithmeticMixTask(n_train=300, n_val=150, n_per_length=0).reward(p, skipped) == 1.0
    assert strict.reward(p, think + "</think>" + str(int(p.answer) + 1)) == -1.0
    assert strict.reward(p, ref.replace("</think>", "</think>0</think>")) == -1.0  # something between
    # From the command line: task.settings reach the task.
    assert get_task("arithmetic-mix", verify_scratchpad=True, n_train=300, n_val=150, n_per_length=0).verify_scratchpad
