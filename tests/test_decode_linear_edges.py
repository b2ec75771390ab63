"""The generator's oneDNN linear layers (scalerl.generate.linear) at their edges: a bias oneDNN would
misread, a switched model run on a machine where oneDNN is not chosen, torch's own switch for it off.
(A review's reproducers: each failed before the checks at every call.)"""

import copy
import pickle

import pytest
import torch

import scalerl.generate.linear as linear_module


@pytest.fixture()
def onednn(monkeypatch):
    """The oneDNN path switched on whatever this CPU, for every call (as tests/test_decode_speedups.py's)."""
    if not torch.backends.mkldnn.is_available():
        pytest.skip("torch was built without oneDNN")
    monkeypatch.setattr(linear_module, "onednn_faster", lambda: True)
    monkeypatch.setattr(linear_module, "MIN_ROWS", 1)
    return linear_module


def _strided_bias(n: int) -> torch.Tensor:
    return torch.randn(2 * n)[::2]  # a view with stride 2 (e.g. one of two interleaved fused biases)


def _expanded_bias(n: int) -> torch.Tensor:
    return torch.randn(1).expand(n)  # one value shared by every output (stride 0)


@pytest.mark.parametrize("make_bias", [_strided_bias, _expanded_bias], ids=["strided", "expanded"])
def test_a_non_contiguous_bias_gives_nn_linears_numbers_in_the_generators_pass(onednn, make_bias):
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 96)
    layer.bias = torch.nn.Parameter(make_bias(96))
    assert onednn.use_decode_linear(layer)
    x = torch.randn(40, 64)
    with torch.inference_mode():
        expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
        with onednn.decoding():
            got = layer(x)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_a_model_switched_elsewhere_keeps_mkl_on_a_cpu_where_onednn_is_not_chosen(onednn, monkeypatch):
    """A model switched on an AMD CPU with AVX-512 and pickled (torch.save(model), which ead470c made
    work) or deep-copied, then run where onednn_faster() is False (an Intel CPU; a torch build
    without oneDNN, where the op would raise): the docs say nothing changes there, and the
    generator says decode_linear=False -- but its passes still call oneDNN."""
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(512, 96))
    assert onednn.use_decode_linear(layer)
    moved = pickle.loads(pickle.dumps(copy.deepcopy(layer)))
    monkeypatch.setattr(linear_module, "onednn_faster", lambda: False)  # the other machine
    assert not onednn.use_decode_linear(moved)
    x = torch.randn(40, 512)
    with torch.inference_mode():
        mkl = torch.nn.functional.linear(x, moved[0].weight, moved[0].bias)
        dnn = torch.ops.mkldnn._linear_pointwise(x, moved[0].weight, moved[0].bias, "none", [], "")
        assert not torch.equal(mkl, dnn)  # the two libraries round this shape differently (K = 512)
        with onednn.decoding():
            got = moved(x)
    assert torch.equal(got, mkl)  # "nothing changes" where oneDNN is not chosen


def test_torchs_switch_for_onednn_off_keeps_the_generators_passes_on_mkl(onednn):
    """``torch.backends.mkldnn.flags(enabled=False)`` is how a torch user turns oneDNN off (a suspected
    oneDNN bug, a comparison run): the generator's passes should keep torch's path then."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(512, 96)
    assert onednn.use_decode_linear(layer)
    x = torch.randn(40, 512)
    with torch.backends.mkldnn.flags(enabled=False), torch.inference_mode():
        mkl = torch.nn.functional.linear(x, layer.weight, layer.bias)
        with onednn.decoding():
            got = layer(x)
    assert torch.equal(got, mkl)
