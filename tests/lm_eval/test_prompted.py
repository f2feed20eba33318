"""Prompt-based systems: Full is the plain base LM's greedy decoding of document part +
prompt (padding and adapters make no difference), and the decoding cost is accounted
per example from what each generated token attended to."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from nugget_core.nugget2d.prompts import PromptFormat, encode
from stages.nugget2d.lm.prompted import eos_and_pad, generate_batch

DOCS = ["[INST] the river delta was born in Paris of a city", "[INST] alpha gamma"]
PROMPTS = [" Based on the provided document, answer the following question: where? [/INST]", " Please [/INST]"]


def _plain_greedy(model, ids: list[int], steps: int, eos: int) -> list[int]:
    """Reference: the base LM (adapters off) re-reading the whole sequence every step."""
    out = []
    with torch.no_grad():
        for _ in range(steps):
            logits = model.lm_forward(input_ids=torch.tensor([ids + out])).logits[0, -1]
            token = int(logits.argmax())
            if token == eos:
                break
            out.append(token)
    return out


def test_inst_format_lays_out_appendix_c_exactly():
    from stages.nugget2d.lm_builders import (
        lmsumm_instruction,
        lmsumm_prompt,
        qa_record,
        summary_record,
    )

    fmt = PromptFormat("inst")
    for record in (qa_record("Doc text.", "q?", "a"), summary_record("Doc text.", "s")):
        doc, prompt = fmt.parts(record["document"], record["instruction"])
        assert doc == "[INST] Doc text." and prompt == " " + record["prompt"]
        assert doc + prompt == record["full_prompt"]
    nodoc = fmt.parts("", qa_record("Doc text.", "q?", "a")["instruction"])
    assert nodoc == ("[INST]", " Based on the provided document, answer the following question: q? [/INST]")
    text = "one two three four five six seven eight nine ten eleven"
    doc, prompt = fmt.parts(text, before=lmsumm_instruction(text, 0.1))
    assert doc + prompt == lmsumm_prompt(text, 0.1) and prompt == " [/INST]"


def test_chat_template_format_cuts_the_turn_where_the_document_ends(tokenizer):
    from stages.nugget2d.lm_builders import qa_record

    with pytest.raises(ValueError, match="prompts.format: chat_template, but tokenizer"):
        PromptFormat("chat_template", tokenizer)
    with pytest.raises(ValueError, match="prompts.format: value 'llama3'"):
        PromptFormat("llama3")
    chat = copy.deepcopy(tokenizer)
    chat.chat_template = ("{% for m in messages %}<|user|>\n{{ m['content'] }}\n{% endfor %}"
                          "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
    fmt = PromptFormat("chat_template", chat)
    record = qa_record("Doc text.", "q?", "a")
    doc, prompt = fmt.parts(record["document"], record["instruction"])
    assert doc == "<|user|>\nDoc text."
    assert prompt == " Based on the provided document, answer the following question: q?\n<|assistant|>\n"
    assert fmt.parts("", record["instruction"])[0] == "<|user|>"  # NoDoc: the newline opens the prompt part
    assert fmt.answer_prefix == "" and PromptFormat("inst").answer_prefix == " "


def test_full_system_is_the_base_lm_and_padding_free(model, tokenizer):
    docs, prompts = encode(tokenizer, DOCS), encode(tokenizer, PROMPTS)
    eos, _ = eos_and_pad(tokenizer)
    gens = generate_batch(model, tokenizer, docs, prompts, ratio=None, max_new_tokens=6)
    for g, d, p in zip(gens, docs, prompts, strict=True):
        assert g.tokens == _plain_greedy(model, d + p, 6, eos)
        assert g.context_states == len(d)
    alone = generate_batch(model, tokenizer, docs[1:], prompts[1:], ratio=None, max_new_tokens=6)
    assert alone[0].tokens == gens[1].tokens


def test_nugget2d_keeps_ceil_r_n_states_and_differs_from_full(model, tokenizer):
    docs, prompts = encode(tokenizer, DOCS), encode(tokenizer, PROMPTS)
    nug = generate_batch(model, tokenizer, docs, prompts, ratio=0.5, max_new_tokens=6)
    full = generate_batch(model, tokenizer, docs, prompts, ratio=None, max_new_tokens=6)
    assert [g.context_states for g in nug] == [math.ceil(0.5 * len(d)) for d in docs]
    assert [g.tokens for g in nug] != [g.tokens for g in full]


@pytest.mark.parametrize("ratio", [None, 0.25])
def test_decode_cost_counts_what_each_token_attended_to(model, tokenizer, ratio):
    docs, prompts = encode(tokenizer, DOCS), encode(tokenizer, PROMPTS)
    gens = generate_batch(model, tokenizer, docs, prompts, ratio=ratio, max_new_tokens=5, soft_prompt=True)
    layers, kv_heads = model.lm.config.num_hidden_layers, model.lm.config.num_key_value_heads
    head_dim = model.lm.config.hidden_size // model.lm.config.num_attention_heads
    per_position = 2 * layers * kv_heads * head_dim * 4  # keys + values, fp32
    soft = 0 if ratio is None else model.soft_prompt.shape[0]
    for g, p in zip(gens, prompts, strict=True):
        n = g.cost.generated_tokens
        first = g.context_states + len(p) + soft  # positions seen by the query of token 0
        assert g.cost.attended_states == pytest.approx(sum(first + i for i in range(n)) / n)
        assert g.cost.kv_bytes == pytest.approx(per_position * (first + n - 1))
        assert g.cost.ms_per_token > 0 and g.cost.encode_ms > 0


def test_bf16_evaluation_decodes_through_the_same_path(model, tokenizer):
    """eval.dtype=bf16 (the GPU setting) is honoured on the CPU too: the placed model holds
    bf16 weights, decodes both systems, and its KV bytes per position halve."""
    from stages.common.device import place_model

    docs, prompts = encode(tokenizer, DOCS), encode(tokenizer, PROMPTS)
    fp32 = generate_batch(model, tokenizer, docs, prompts, ratio=0.5, max_new_tokens=4)
    half = place_model(copy.deepcopy(model), "cpu", "bf16")
    assert half.dtype is torch.bfloat16 and half.device == torch.device("cpu")
    for ratio in (None, 0.5):
        gens = generate_batch(half, tokenizer, docs, prompts, ratio=ratio, max_new_tokens=4)
        assert all(1 <= g.cost.generated_tokens <= 4 for g in gens)
    bf16 = generate_batch(half, tokenizer, docs, prompts, ratio=0.5, max_new_tokens=4)
    positions = lambda g: g.context_states + len(prompts[0]) + g.cost.generated_tokens - 1  # noqa: E731
    per_position = [g.cost.kv_bytes / positions(g) for g in (fp32[0], bf16[0])]
    assert bf16[0].context_states == fp32[0].context_states
    assert per_position[1] == pytest.approx(per_position[0] / 2)


def test_inst_prompts_start_with_the_bos_a_llama_tokenizer_adds():
    """LLaMA-2-chat reads ``<s>[INST] ...`` (appendix C): with a tokenizer that starts every
    sequence with BOS, the document part (or NoDoc's bare turn) begins with exactly one
    BOS id; a tokenizer that adds none (SmolLM2's byte-level BPE) gets none."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from stages.nugget2d.lm_builders import qa_record

    sp = Tokenizer(models.BPE(unk_token="<unk>"))
    sp.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    sp.train_from_iterator(["[INST] the doc text . [/INST] answer the question"] * 20,
                           trainers.BpeTrainer(vocab_size=80, special_tokens=["<unk>", "<s>", "</s>"]))
    no_bos = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(sp.to_str()), bos_token="<s>")  # no BOS added
    sp.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    llama = PreTrainedTokenizerFast(tokenizer_object=sp, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    record = qa_record("the doc text .", "q?", "a")
    fmt = PromptFormat("inst", llama)
    assert fmt.bos == "<s>"
    doc, prompt = fmt.parts(record["document"], record["instruction"])
    assert doc.startswith("<s>[INST] ") and "<s>" not in prompt
    ids = encode(llama, [doc, prompt])
    assert ids[0][0] == llama.bos_token_id and ids[0].count(llama.bos_token_id) == 1
    assert llama.bos_token_id not in ids[1]
    nodoc, _ = fmt.parts("", record["instruction"])
    assert encode(llama, [nodoc])[0][0] == llama.bos_token_id
    assert PromptFormat("inst", no_bos).bos == "" and PromptFormat("inst").bos == ""
