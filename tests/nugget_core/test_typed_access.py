"""The checked accessors of `nugget_core.typed_access` and the checks that narrowed loose
library types elsewhere in nugget_core: each wrong value gets an error naming what was
expected, not an AttributeError (or a None) further on."""

import pytest
import torch
from torch import nn
from transformers import DynamicCache
from transformers.modeling_outputs import CausalLMOutput, CausalLMOutputWithPast

from nugget_core.nugget2d.baselines import FullStream
from nugget_core.nugget2d.context import pack_answer_inputs
from nugget_core.nugget2d.kv import LayerKV
from nugget_core.typed_access import (
    child,
    dynamic_cache_of,
    hf_generate,
    input_embedding,
    logits_of,
)


class _Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Linear(2, 2)  # not the ModuleList an HF stack has
        self.head = nn.Linear(2, 2)

    def get_input_embeddings(self) -> nn.Module:
        return self.head


def test_child_names_the_attribute_and_the_expected_class():
    stack = _Stack()
    assert child(stack, "head", nn.Linear) is stack.head
    with pytest.raises(TypeError, match=r"_Stack\.layers is Linear, expected ModuleList"):
        child(stack, "layers", nn.ModuleList)


def test_input_embedding_is_the_token_table(model_factory):
    model = model_factory("bart")
    assert input_embedding(model) is model.get_input_embeddings()
    with pytest.raises(TypeError, match=r"_Stack\.get_input_embeddings\(\) is Linear, expected Embedding"):
        input_embedding(_Stack())


def test_hf_generate_refuses_a_model_without_generate(model_factory):
    model = model_factory("bart")
    ids = torch.tensor([[0, 5, 6, 2]])
    assert torch.equal(hf_generate(model, input_ids=ids, max_new_tokens=2, do_sample=False),
                       model.generate(input_ids=ids, max_new_tokens=2, do_sample=False))
    with pytest.raises(TypeError, match="BartModel has no generate"):
        hf_generate(model.model, input_ids=ids)


def test_output_fields_declared_optional_must_be_there():
    logits = torch.zeros(1, 2, 3)
    assert logits_of(CausalLMOutput(logits=logits)) is logits
    with pytest.raises(ValueError, match="CausalLMOutput has no logits"):
        logits_of(CausalLMOutput(logits=None))
    cache = DynamicCache()
    assert dynamic_cache_of(CausalLMOutputWithPast(logits=logits, past_key_values=cache)) is cache
    with pytest.raises(ValueError, match="past_key_values is NoneType, not a DynamicCache"):
        dynamic_cache_of(CausalLMOutputWithPast(logits=logits, past_key_values=None))


def test_layer_kv_from_a_cache_layer_that_never_ran():
    keys = torch.zeros(1, 2, 3, 4)
    cache = DynamicCache()
    cache.update(keys, keys + 1, 0)
    kv = LayerKV.from_cache(cache)
    assert torch.equal(kv.keys[0], keys) and torch.equal(kv.values[0], keys + 1)
    cache.layers[0].keys = None  # a layer HF created but no pass filled
    with pytest.raises(ValueError, match="cache layer 0 .* holds no keys and values"):
        LayerKV.from_cache(cache)


def test_prompt_ids_need_their_mask():
    ids = torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="pass prompt_mask with prompt_ids"):
        pack_answer_inputs(lambda t: torch.zeros(*t.shape, 4), None, ids, None, ids, ids)


def test_a_stream_that_keeps_every_token_has_no_recent_window():
    assert FullStream(None, window=5).recent_window == 5  # the model is not read here
    with pytest.raises(RuntimeError, match="FullStream keeps every token: it has no recent window"):
        _ = FullStream(None, window=None).recent_window
