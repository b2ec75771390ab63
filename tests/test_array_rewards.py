"""A reward function that returns a torch tensor or a numpy array: one value scores as that value
(a bool as +1 / -1), anything of another shape is a failed call."""

import textwrap

import numpy as np
import pytest
import torch

from scalerl.tasks.base import Problem
from scalerl.tasks.reward_worker import to_reward
from scalerl.tasks.rewards import UserReward

BOOL_TENSOR = '''
def tensor_bool(completion, answer):
    import torch
    return torch.tensor(completion == answer)

def batch_of_one(completion, answer):
    import torch
    return torch.tensor([1.0 if completion == answer else -1.0])
'''


@pytest.fixture
def tensor_rewards(tmp_path, monkeypatch):
    (tmp_path / "tensor_rewards.py").write_text(textwrap.dedent(BOOL_TENSOR))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_torch_bool_tensor_scores_like_a_bool(tensor_rewards):
    # Review g's reproducer. The contract (docs/tasks.md): a bool scores True -> +1, False -> -1;
    # numpy's bool does (test_rewards.py), but a comparison of torch tensors -- a classifier judge's
    # `(logits.argmax() == label)` -- returns a 0-d bool tensor, read by float() as 1.0 / 0.0.
    with UserReward("tensor_rewards:tensor_bool") as reward:
        problem = Problem(id="2+2", prompt="2+2=", answer="4")
        assert reward(problem, "4") == 1.0 and reward(problem, "5") == -1.0


def test_a_one_element_tensor_is_refused_as_a_numpy_array_is(tensor_rewards):
    with UserReward("tensor_rewards:batch_of_one") as reward:
        problem = Problem(id="2+2", prompt="2+2=", answer="4")
        assert reward(problem, "4") == -1.0  # a failed call, not a pass
        assert reward.stats.errors == 1
        assert "returned Tensor of shape (1,), not one number" in reward.stats.last_error


@pytest.mark.parametrize("value, score", [
    (torch.tensor(True), 1.0), (torch.tensor(False), -1.0),
    (np.array(True), 1.0), (np.array(False), -1.0),  # a 0-d numpy bool array scored 1.0 / 0.0 too
    (torch.tensor(0.25), 0.25), (np.array(0.25), 0.25), (torch.tensor(3), 3.0), (np.float32(0.5), 0.5),
    (torch.tensor(0.5, requires_grad=True), 0.5),
])
def test_a_0d_array_scores_as_the_value_it_holds(value, score):
    assert to_reward(value) == score


@pytest.mark.parametrize("value", [torch.tensor([1.0]), np.array([1.0]), torch.tensor([True]), torch.tensor([[2.0]]),
                                   torch.tensor([0.5, 0.5])])
def test_an_array_of_any_other_shape_is_refused(value):
    with pytest.raises(TypeError, match=r"of shape \(.*\), not one number .*item\(\)"):
        to_reward(value)


def test_a_0d_text_array_is_text_not_a_number():
    # float(numpy.array('4')) is 4.0: the answer a function extracted would have scored 4, a pass.
    with pytest.raises(TypeError, match="returned str '4', not a number"):
        to_reward(np.array("4"))
