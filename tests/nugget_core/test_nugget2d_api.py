"""The Nugget2D model methods evaluation uses, the one attention-mask builder, the
options of `ar_loss`, the adaptor registry and the lazy package imports."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from transformers import DynamicCache

from nugget_core import ResidualMode
from nugget_core.adaptors import (
    LlamaFamilyAdaptor,
    get_adaptor,
    get_causal_adaptor,
    register_adaptor,
    supported_model_types,
)
from nugget_core.adaptors.registry import _REGISTRY
from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel
from nugget_core.nugget2d.autoregressive import ar_forward, ar_loss, ar_scores, threshold_for_ratio
from nugget_core.nugget2d.bias import nugget_attention_mask
from nugget_core.nugget2d.kv import LayerKV

pytestmark = pytest.mark.usefixtures("one_thread")


def _trained_looking(causal_factory, **overrides) -> tuple[torch.nn.Module, Nugget2DModel]:
    """A reference HF LM and a Nugget2D model on an identical copy whose adapters and
    scorer are non-trivial (so "adapters off" is observable)."""
    reference = causal_factory()
    config = dict(scorer_layer=1, lora_rank=4, recent_window=4, distant_window=6, max_nuggets=2)
    config.update(overrides)
    model = Nugget2DModel(causal_factory(), Nugget2DConfig(**config))
    with torch.no_grad():
        for name, p in model.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)
        for p in model.scorer.parameters():
            p.normal_(std=0.5)
    return reference, model


# --- Nugget2DModel.lm_forward / encode_full ------------------------------------------


def test_lm_forward_without_adapter_is_the_plain_hf_model(causal_factory, doc_batch):
    reference, model = _trained_looking(causal_factory)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]
    with torch.no_grad():
        expected = reference(input_ids=ids, attention_mask=mask).logits
        plain = model.lm_forward(input_ids=ids, attention_mask=mask).logits
        theta = model.lm_forward("decoder", input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(plain, expected)
    assert not torch.allclose(theta, expected, atol=1e-3)


def test_a_pass_on_one_adapter_computes_only_that_one(causal_factory, doc_batch):
    """An inactive adapter costs nothing (its lora_A never runs), per-token
    gates run both, and routing never touches requires_grad."""
    reference, model = _trained_looking(causal_factory)
    calls = {"compressor": 0, "decoder": 0}

    def count(name):
        def hook(*_):
            calls[name] += 1
        return hook

    for module in model.peft.modules():
        lora_a = getattr(module, "lora_A", None)
        if isinstance(lora_a, torch.nn.ModuleDict):
            for name in calls:
                lora_a[name].register_forward_hook(count(name))
    trainable = {n: p.requires_grad for n, p in model.named_parameters()}
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]

    def passes(**kwargs) -> dict[str, int]:
        before = dict(calls)
        with torch.no_grad():
            model.lm_forward(input_ids=ids, attention_mask=mask, **kwargs)
        return {n: calls[n] - before[n] for n in calls}

    assert passes() == {"compressor": 0, "decoder": 0}
    theta = passes(adapter="decoder")
    assert theta["compressor"] == 0 and theta["decoder"] > 0
    assert passes(adapter="compressor") == {"compressor": theta["decoder"], "decoder": 0}
    phi_gate = (torch.arange(ids.shape[1]) % 2).float()[None, :, None].expand(ids.shape[0], -1, -1)
    both = passes(gates=(phi_gate, 1 - phi_gate))
    assert both == {"compressor": theta["decoder"], "decoder": theta["decoder"]}
    assert model.router.active == ()  # back to the base LM outside a pass
    assert {n: p.requires_grad for n, p in model.named_parameters()} == trainable
    with torch.no_grad():  # and the base-LM pass is still exactly the plain model
        torch.testing.assert_close(model.lm_forward(input_ids=ids, attention_mask=mask).logits,
                                   reference(input_ids=ids, attention_mask=mask).logits)


def test_encode_full_is_the_plain_hf_cache(causal_factory, doc_batch):
    reference, model = _trained_looking(causal_factory)
    ids, mask = doc_batch["doc_ids"], doc_batch["doc_mask"]
    cache = DynamicCache()
    with torch.no_grad():
        reference(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True)
        context = model.encode_full(ids, mask)
    expected = LayerKV.from_cache(cache)
    pairs = zip(context.kv.keys + context.kv.values, expected.keys + expected.values, strict=True)
    for got, want in pairs:
        torch.testing.assert_close(got, want)
    assert context.counts.tolist() == [12, 8] and context.lengths.tolist() == [12, 8]
    assert not context.scores.any() and context.positions[1].tolist() == list(range(12))


@pytest.mark.parametrize("residual", ["direct", "straight_through"])
def test_decoding_a_full_context_with_the_base_lm_continues_the_document(
    causal_factory, doc_batch, residual
):
    """encode_full + decoder_pass(adapter=None) == the plain LM over doc + prompt."""
    reference, model = _trained_looking(causal_factory, residual=residual)
    prompt, prompt_mask = doc_batch["prompt_ids"], doc_batch["prompt_mask"]
    with torch.no_grad():
        context = model.encode_full(doc_batch["doc_ids"], doc_batch["doc_mask"])
        logits, _ = model.decoder_pass(context, model.embed(prompt), prompt_mask, adapter=None)
        for b in range(2):
            n_doc, n_prompt = int(context.lengths[b]), int(prompt_mask[b].sum())
            ids = torch.cat([doc_batch["doc_ids"][b, :n_doc], prompt[b, :n_prompt]])[None]
            expected = reference(ids).logits[0, n_doc:]
            torch.testing.assert_close(logits[b, :n_prompt], expected)


# --- bias.nugget_attention_mask -----------------------------------------------------------------


def test_attention_mask_adds_the_residual_on_nugget_keys_only():
    visible = torch.tensor([[[True, True, False]]])
    scores = torch.tensor([[0.5, 0.0, 2.0]], requires_grad=True)
    direct = nugget_attention_mask(visible, torch.float32, scores, ResidualMode.DIRECT)
    assert direct.shape == (1, 1, 1, 3)
    assert direct[0, 0, 0, :2].tolist() == [0.5, 0.0]
    assert direct[0, 0, 0, 2] <= torch.finfo(torch.float32).min + 2.0
    plain = nugget_attention_mask(visible, torch.float32)
    straight = nugget_attention_mask(visible, torch.float32, scores, "straight_through")
    torch.testing.assert_close(straight, plain)  # forward unchanged ...
    straight[0, 0, 0, 0].backward()
    assert scores.grad.tolist() == [[1.0, 0.0, 0.0]]  # ... gradient through the nugget key
    with torch.no_grad():  # nothing to carry: the plain visibility mask itself
        torch.testing.assert_close(
            nugget_attention_mask(visible, torch.float32, scores, "direct"), direct
        )
        for mode in ("straight_through", "none"):
            torch.testing.assert_close(
                nugget_attention_mask(visible, torch.float32, scores, mode), plain
            )


# --- ar_loss options (what the training task computes) ------------------------------------


def _task_loss(model, ids, predict_last, threshold):
    """The training task's own copy: in-batch (1 - r) quantile without a calibrated Lambda."""
    if threshold is None:
        with torch.no_grad():
            scores = ar_scores(model, ids, model.config.scorer_context)
        threshold = threshold_for_ratio(scores, model.config.ratio)
    logits = ar_forward(model, ids, threshold=threshold).logits
    start = ids.shape[1] - predict_last
    loss = torch.nn.functional.cross_entropy(
        logits[:, start - 1 : -1].flatten(0, 1).float(), ids[:, start:].flatten()
    )
    return loss, logits


@pytest.mark.parametrize("threshold", [None, 0.3])
def test_ar_loss_covers_the_training_task(causal_factory, threshold):
    _, model = _trained_looking(causal_factory, ratio=0.25)
    ids = torch.randint(3, 64, (2, 14), generator=torch.Generator().manual_seed(5))
    expected_loss, expected_logits = _task_loss(model, ids, 4, threshold)
    out = ar_loss(model, ids, predict_last=4, threshold=threshold, ratio=model.config.ratio)
    torch.testing.assert_close(out.loss, expected_loss)
    torch.testing.assert_close(out.logits, expected_logits)
    if threshold is None:
        assert int(out.selected.sum()) == 7  # 0.25 of 28 tokens, above the quantile
    out.loss.backward()
    assert float(model.scorer.ffn[0].weight.grad.abs().sum()) > 0


def test_ar_loss_needs_some_threshold(causal_factory):
    _, model = _trained_looking(causal_factory)
    with pytest.raises(ValueError, match="needs a threshold"):
        ar_loss(model, torch.randint(3, 64, (1, 8)))


# --- the adaptor registry --------------------------------------------------------------------


def test_one_registry_serves_both_families(model_factory, causal_factory):
    assert supported_model_types() == ["bart", "mbart", "t5"]
    assert supported_model_types("causal") == ["llama", "mistral", "qwen2"]
    assert type(get_adaptor(model_factory("t5"))).__name__ == "T5Adaptor"
    lm = causal_factory()
    assert isinstance(get_adaptor(lm, "causal"), LlamaFamilyAdaptor)
    with pytest.raises(ValueError, match="Nugget does not support model_type='llama'"):
        get_adaptor(lm)
    with pytest.raises(ValueError, match="Nugget2D does not support model_type='t5'"):
        get_causal_adaptor(model_factory("t5"))
    lm.set_attn_implementation("eager")
    get_causal_adaptor(lm)


def test_register_adaptor_adds_a_llama_like_family(causal_factory):
    lm = causal_factory()
    lm.config.model_type = "my_llama"
    with pytest.raises(ValueError, match="Nugget2D does not support model_type='my_llama'"):
        get_causal_adaptor(lm)
    register_adaptor(LlamaFamilyAdaptor, "my_llama")
    try:
        model = Nugget2DModel(lm, Nugget2DConfig(scorer_layer=1, lora_rank=4))
        assert model.compress(torch.randint(3, 64, (1, 6))).counts.tolist() == [1]
    finally:
        del _REGISTRY[("causal", "my_llama")]


# --- lazy package imports ------------------------------------------------------------------


def test_light_names_import_without_torch():
    code = (
        "import sys\n"
        "from nugget_core import NuggetConfig, ResidualMode, SelectorKind, TinyBartSpec\n"
        "from nugget_core.nugget2d import Nugget2DConfig, TinyCausalSpec\n"
        "NuggetConfig(); Nugget2DConfig(); TinyBartSpec(); TinyCausalSpec()\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_exported_name_resolves():
    import nugget_core
    import nugget_core.nugget
    import nugget_core.nugget2d
    import nugget_core.testing

    for package in (nugget_core, nugget_core.nugget, nugget_core.nugget2d, nugget_core.testing):
        assert sorted(package.__all__) == sorted(package._EXPORTS)
        for name in package.__all__:
            assert getattr(package, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        nugget_core.nope  # noqa: B018


def test_type_checking_imports_mirror_the_lazy_tables():
    """Static readers (type checkers, stages.framework.provenance's import closure) see
    the ``if TYPE_CHECKING:`` imports, so they must name exactly the lazy table."""
    import ast
    import importlib

    for name in (
        "nugget_core",
        "nugget_core.nugget",
        "nugget_core.nugget2d",
        "nugget_core.testing",
    ):
        package = importlib.import_module(name)
        tree = ast.parse(open(package.__file__).read())
        static = {
            alias.name: "." * node.level + (node.module or "")
            for block in tree.body
            if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
            for node in block.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        assert static == package._EXPORTS, name
