"""User-facing errors cross process boundaries (a generator process, a Ray actor, the --nproc launcher's ranks) by
pickling: each must arrive as itself, with its message and fields."""

import pickle

import pytest

from scalerl.config import UnknownKey
from scalerl.curves.rows import UnknownColumn
from scalerl.errors import CannotResume, ScaleRLError
from scalerl.models.devices import DeviceUnavailable
from scalerl.tasks.data_files import SplitNotFound


@pytest.mark.parametrize("exc", [
    UnknownColumn("no column 'acc'", ["step", "reward"], {"step": 3}),
    UnknownKey("unknown key 'lr' in recipe", "lr", "recipe.lr"),
    SplitNotFound("no split 'test' in the dataset"),
    CannotResume("the run log is missing", "; train it anew"),
    DeviceUnavailable("run.device", "cuda:1: only 1 GPU(s)", "--set run.device=cuda:0", instead="cuda:0"),
], ids=lambda exc: type(exc).__name__)
def test_a_user_facing_error_unpickles_as_itself(exc):
    """Subclasses whose constructors take more than the message did not unpickle (reached the trainer as a bare
    ScaleRLError), and SplitNotFound's advice came back twice."""
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert str(back) == str(exc) and back.args == exc.args
    assert back.__dict__ == exc.__dict__
    assert str(back).count(SplitNotFound.ADVICE) <= 1


def test_every_user_facing_error_class_is_covered():
    """A new subclass with its own constructor is pickled by the base class's rule: no class defines its own."""
    import scalerl.cli  # noqa: F401 -- (imports the commands, which import the modules that define the errors)
    assert scalerl.cli.main

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    own = [c.__qualname__ for c in subclasses(ScaleRLError) if "__reduce__" in vars(c)]
    assert own == []
