"""The oneDNN linear layers (scalerl.models.onednn_linear) at their edges: a bias oneDNN would
misread, a switched model run on a machine where oneDNN is not chosen, torch's own switch for it off.
(A review's reproducers: each failed before the checks at every call.)"""

import copy
import pickle

import pytest
import torch

import scalerl.models.onednn_linear as linear_module


def _strided_bias(n: int) -> torch.Tensor:
    return torch.randn(2 * n)[::2]  # a view with stride 2 (e.g. one of two interleaved fused biases)


def _expanded_bias(n: int) -> torch.Tensor:
    return torch.randn(1).expand(n)  # one value shared by every output (stride 0)


@pytest.mark.parametrize("make_bias", [_strided_bias, _expanded_bias], ids=["strided", "expanded"])
def test_a_non_contiguous_bias_gives_nn_linears_numbers_in_the_generators_pass(onednn, make_bias):
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 96)
    layer.bias = torch.nn.Parameter(make_bias(96))
    assert onednn.use_onednn_linear(layer)
    x = torch.randn(40, 64)
    with torch.inference_mode():
        expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
        got = layer(x)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_a_model_switched_elsewhere_keeps_mkl_on_a_cpu_where_onednn_is_not_chosen(onednn, monkeypatch):
    """A model switched on an AMD CPU with AVX-512 and pickled (torch.save(model), which ead470c made
    work) or deep-copied, then run where onednn_faster() is False (an Intel CPU; a torch build
    without oneDNN, where the op would raise): the docs say nothing changes there, and the
    generator says decode_linear=False -- but its passes still call oneDNN."""
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(512, 96))
    assert onednn.use_onednn_linear(layer)
    moved = pickle.loads(pickle.dumps(copy.deepcopy(layer)))
    monkeypatch.setattr(linear_module, "onednn_faster", lambda: False)  # the other machine
    assert not onednn.use_onednn_linear(moved)
    x = torch.randn(40, 512)
    with torch.inference_mode():
        mkl = torch.nn.functional.linear(x, moved[0].weight, moved[0].bias)
        dnn = torch.ops.mkldnn._linear_pointwise(x, moved[0].weight, moved[0].bias, "none", [], "")
        assert not torch.equal(mkl, dnn)  # the two libraries round this shape differently (K = 512)
        got = moved(x)
    assert torch.equal(got, mkl)  # "nothing changes" where oneDNN is not chosen


def test_torchs_switch_for_onednn_off_keeps_the_generators_passes_on_mkl(onednn):
    """``torch.backends.mkldnn.flags(enabled=False)`` is how a torch user turns oneDNN off (a suspected
    oneDNN bug, a comparison run): the generator's passes should keep torch's path then."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(512, 96)
    assert onednn.use_onednn_linear(layer)
    x = torch.randn(40, 512)
    with torch.backends.mkldnn.flags(enabled=False), torch.inference_mode():
        mkl = torch.nn.functional.linear(x, layer.weight, layer.bias)
        got = layer(x)
    assert torch.equal(got, mkl)


def test_the_trainers_pass_gives_torchs_gradients_for_what_is_trained_only(onednn):
    """A frozen weight (LoRA's base) gets no gradient, a layer without bias works, and a
    non-contiguous input (a transposed view) gets torch's gradient."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(24, 40, bias=False)
    layer.weight.requires_grad_(False)
    reference = copy.deepcopy(layer)
    assert onednn.use_onednn_linear(layer)
    base = torch.randn(3, 24, 50, requires_grad=True)
    upstream = torch.randn(3, 50, 40)
    x = base.transpose(1, 2)  # (3, 50, 24), not contiguous
    (ours,) = torch.autograd.grad((layer(x) * upstream).sum(), base)
    (expected,) = torch.autograd.grad((reference(x) * upstream).sum(), base)
    assert layer.weight.grad is None
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-5)


def test_a_switched_layer_under_autocast_or_a_strided_bias_with_gradients_takes_torchs_path(onednn):
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 96)
    layer.bias = torch.nn.Parameter(_strided_bias(96))
    assert onednn.use_onednn_linear(layer)
    x = torch.randn(40, 64, requires_grad=True)
    y = layer(x)
    assert torch.equal(y, torch.nn.functional.linear(x, layer.weight, layer.bias))
    y.sum().backward()
    torch.testing.assert_close(layer.bias.grad, torch.full((96,), 40.0))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert layer(x).dtype == torch.bfloat16  # autocast's own linear, not oneDNN's fp32 op
