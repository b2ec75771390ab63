"""A review's reproducers for the trainer's oneDNN linear layers (scalerl.models.onednn_linear,
a18a172): what torch's ``nn.Linear`` does and a switched layer did not (each failed on that commit)."""

import copy

import pytest
import torch


def _pair(inputs: int = 16, outputs: int = 16) -> tuple[torch.nn.Linear, torch.nn.Linear]:
    torch.manual_seed(0)
    reference = torch.nn.Linear(inputs, outputs)
    return reference, copy.deepcopy(reference)


def test_a_gradient_penalty_through_a_switched_layer_gives_torchs_second_order_gradient(onednn):
    """create_graph=True (a gradient penalty, a Hessian-vector product): torch's layer differentiates its
    own backward; a switched one must give the same numbers -- or refuse, never a silent zero."""
    reference, layer = _pair()
    assert onednn.use_onednn_linear(layer)
    x = torch.randn(8, 16, requires_grad=True)
    second = []
    for module in (reference, layer):
        (gx,) = torch.autograd.grad(torch.tanh(module(x)).pow(2).sum(), x, create_graph=True)
        (gw,) = torch.autograd.grad(gx.pow(2).sum(), module.weight, allow_unused=True)
        second.append(gw)
    assert second[1] is not None
    torch.testing.assert_close(second[1], second[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_torch_func_transforms_of_a_switched_layer_work_as_torchs(onednn, transform):
    """torch.func.grad w.r.t. the input, or vmap, over a model that holds its own parameters: torch's
    layer supports both; a switched layer raised RuntimeError ("must override the setup_context")."""
    reference, layer = _pair()
    assert onednn.use_onednn_linear(layer)
    xs = torch.randn(3, 8, 16)
    if transform == "grad":
        expected = torch.func.grad(lambda x: reference(x).sum())(xs[0])
        got = torch.func.grad(lambda x: layer(x).sum())(xs[0])
    else:
        expected = torch.func.vmap(reference)(xs)
        got = torch.func.vmap(layer)(xs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_a_frozen_switched_layer_keeps_no_more_for_its_backward_than_torchs(onednn):
    """A frozen weight (LoRA's base layers; with a subset of target modules or LoRA dropout the input is
    not saved by anything else): torch's linear keeps only the weight for dx; the switched layer kept the
    input too (tiny model, LoRA on q/v: 38.2 -> 48.2 MiB saved for 16 x 64 tokens)."""
    reference, layer = _pair(64, 64)
    for module in (reference, layer):
        module.weight.requires_grad_(False)
        module.bias.requires_grad_(False)
    assert onednn.use_onednn_linear(layer)
    x = torch.randn(40, 64, requires_grad=True)

    def saved(module):
        kept = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: kept.append(t) or t, lambda t: t):
            module(x)
        return [t for t in kept if t.untyped_storage().data_ptr() != module.weight.untyped_storage().data_ptr()]

    assert saved(reference) == []
    assert saved(layer) == []
