import pytest

from scalerl.errors import InputError
from scalerl.tasks import get_task
from scalerl.tasks.arithmetic import ArithmeticTask, final_answer, reference_completion, scratchpad
from scalerl.tasks.base import Problem


def test_reference_completion_is_column_by_column_with_carries():
    assert scratchpad(47, 38) == "7+8+0=15\n4+3+1=8\n"
    assert reference_completion(47, 38) == "<think>7+8+0=15\n4+3+1=8\n</think>85"
    assert reference_completion(95, 7) == "<think>5+7+0=12\n9+0+1=10\n</think>102"


@pytest.mark.parametrize("digits", [1, 2, 3])
def test_train_and_eval_sets_are_disjoint(digits):
    task = ArithmeticTask(digits=digits, n_train=5000 if digits == 3 else None)
    train_ids = {p.id for p in task.train_problems()}
    for name, problems in task.eval_sets().items():
        assert problems, name
        assert not train_ids & {p.id for p in problems}, name


def test_partition_does_not_depend_on_seed_or_difficulty():
    # A pair held out in one run is held out in every run: the warm start never sees a val problem.
    held = {p.id for p in ArithmeticTask(digits=2, seed=0).eval_sets()["val"]}
    for other in (ArithmeticTask(digits=2, seed=7), ArithmeticTask(digits=3, seed=0, n_train=20000)):
        assert not held & {p.id for p in other.train_problems()}


def test_deterministic_per_seed_and_different_across_seeds():
    a, b, c = ArithmeticTask(seed=1), ArithmeticTask(seed=1), ArithmeticTask(seed=2)
    assert a.train_problems() == b.train_problems()
    assert a.eval_sets() == b.eval_sets()
    assert a.eval_sets()["val"] != c.eval_sets()["val"]
    assert a.train_problems()[:50] != c.train_problems()[:50]


def test_hard_split_has_a_short_operand_and_val_is_iid():
    task = ArithmeticTask(digits=2)
    hard = task.eval_sets()["hard"]
    assert all(min(len(str(p.meta["a"])), len(str(p.meta["b"]))) < 2 for p in hard)
    assert len(task.eval_sets()["val"]) == 200
    assert "hard" not in ArithmeticTask(digits=1).eval_sets()


def test_problem_fields():
    p = ArithmeticTask().train_problems()[0]
    a, b = p.meta["a"], p.meta["b"]
    assert p.prompt == f"{a}+{b}=" and p.answer == str(a + b) and p.id == f"{a}+{b}"


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("<think>7+8+0=15\n4+3+1=8\n</think>85", 1.0),
        ("<think>anything</think> 85 ", 1.0),
        ("<think>Okay, time is up. </think>85", 1.0),
        ("<think>7+8+0=15\n</think>84", -1.0),  # wrong
        ("85", -1.0),  # no </think>: no final answer
        ("<think>85", -1.0),  # still thinking (truncated)
        ("<think></think>85x", -1.0),  # junk after the answer
        ("<think></think>", -1.0),
        ("<think></think>" + "9" * 5000, -1.0),  # absurdly long: no int() of 5,000 digits
        ("<think>85</think>1</think>85", 1.0),  # the last </think> counts
    ],
)
def test_reward(completion, expected):
    problem = Problem(id="47+38", prompt="47+38=", answer="85", meta={"a": 47, "b": 38})
    assert ArithmeticTask().reward(problem, completion) == expected


def test_final_answer_parses_negative_and_rejects_garbage():
    assert final_answer("<think></think>-3") == -3
    assert final_answer("<think></think>3 4") is None


def test_bad_settings_are_input_errors():
    with pytest.raises(InputError, match="digits"):
        ArithmeticTask(digits=0)
    with pytest.raises(InputError, match="unknown task"):
        get_task("arithmetics")
    with pytest.raises(InputError, match="digitz"):
        get_task("arithmetic", digitz=2)


def test_registry_builds_arithmetic():
    task = get_task("arithmetic", digits=2, n_val=10, n_hard=5)
    assert task.name == "arithmetic"
    assert {k: len(v) for k, v in task.eval_sets().items()} == {"val": 10, "hard": 5}
