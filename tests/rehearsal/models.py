"""Tiny random-init checkpoints in the published layouts of profile=paper's models.

Each folder has the files of its hub repository (config, safetensors weights, the
SentencePiece model and the tokenizer files), the real model's architecture and DEPTH
(layer indices of the config stay valid: ``nugget.scorer_layer``, the sweep's scorer
layers up to 9, ``nugget2d.scorer_layer``) and a tiny width. The SentencePiece models are
trained on the fixture text (`tests.rehearsal.datasets.corpus_texts`), so the tokenizers
segment it into words as the real ones segment real text:

- ``mbart-large-50-many-to-many-mmt``: MBartForConditionalGeneration 12 + 12 layers; a
  unigram ``sentencepiece.bpe.model`` on both languages, MBart50Tokenizer (adds the 52
  language codes and ``<mask>``); no ``tokenizer.json``, as the hub repository, so
  transformers converts the SentencePiece model (which needs the ``sentencepiece`` package);
- ``Llama-2-7b-hf`` / ``Llama-2-7b-chat-hf``: LlamaForCausalLM 32 layers, weights in two
  shards with an index as the hub's, a BPE ``tokenizer.model`` with byte fallback
  (``<unk>`` 0, ``<s>`` 1, ``</s>`` 2), ``tokenizer.json``; the chat one with LLaMA-2-chat's
  chat template; one tokenizer for both (prepare_lm refuses two);
- ``t5-small``: T5ForConditionalGeneration 6 + 6 layers, a unigram ``spiece.model``
  (``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2) and 100 ``<extra_id_N>`` tokens, ``tokenizer.json``.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

WIDTH = 32  # hidden size of every fixture model
HEADS = 4

# LLaMA-2-chat's chat template as the hub's tokenizer_config.json carries it
LLAMA2_CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
)


def train_sentencepiece(texts: list[str], path: Path, **options) -> None:
    """A SentencePiece model of ``texts`` at ``path`` (seeded by its input order only)."""
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=model, hard_vocab_limit=False,
                                   num_threads=1, minloglevel=2, **options)
    path.write_bytes(model.getvalue())


def _json(path: Path, content: dict) -> None:
    path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _save_random(model_class, config, folder: Path, **save) -> None:
    import torch

    torch.manual_seed(0)
    model = model_class(config)
    model.save_pretrained(folder, **save)


def write_mbart50(folder: Path, texts: dict[str, list[str]]) -> None:
    from transformers import AutoTokenizer, MBartConfig, MBartForConditionalGeneration

    folder.mkdir(parents=True)
    # XLM-R / mBART's model: unigram, <unk> 0 <s> 1 </s> 2 (the tokenizer adds fairseq's <pad>)
    train_sentencepiece(texts["en"] + texts["zh"], folder / "sentencepiece.bpe.model", model_type="unigram",
                        vocab_size=2500, character_coverage=1.0)
    _json(folder / "special_tokens_map.json", {
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>", "pad_token": "<pad>",
        "cls_token": "<s>", "mask_token": {"content": "<mask>", "single_word": False, "lstrip": True,
                                           "rstrip": False, "normalized": True}})
    _json(folder / "tokenizer_config.json", {
        "src_lang": None, "tgt_lang": None, "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
        "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>", "model_max_length": 1024,
        "sp_model_kwargs": {}, "tokenizer_class": "MBart50Tokenizer"})
    vocab = len(AutoTokenizer.from_pretrained(folder))
    config = MBartConfig(
        vocab_size=vocab, d_model=WIDTH, encoder_layers=12, decoder_layers=12, encoder_attention_heads=HEADS,
        decoder_attention_heads=HEADS, encoder_ffn_dim=2 * WIDTH, decoder_ffn_dim=2 * WIDTH, max_position_embeddings=1024,
        activation_function="relu", scale_embedding=True, add_final_layer_norm=True, normalize_before=True,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
        architectures=["MBartForConditionalGeneration"])
    _save_random(MBartForConditionalGeneration, config, folder)


def _llama_tokenizer_files(folder: Path, chat: bool) -> None:
    _json(folder / "special_tokens_map.json", {
        name: {"content": tok, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False}
        for name, tok in (("bos_token", "<s>"), ("eos_token", "</s>"), ("unk_token", "<unk>"))})
    _json(folder / "tokenizer_config.json", {
        "add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "pad_token": None, "clean_up_tokenization_spaces": False, "legacy": False, "model_max_length": 1000000000000000019884624838656,
        "padding_side": "right", "sp_model_kwargs": {}, "tokenizer_class": "LlamaTokenizer",
        **({"chat_template": LLAMA2_CHAT_TEMPLATE} if chat else {})})


def write_llama2(base: Path, chat_folder: Path, texts: dict[str, list[str]]) -> None:
    """LLaMA-2-7B and its chat model: the same tokenizer, different random weights."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    base.mkdir(parents=True)
    # LLaMA's model: BPE with byte fallback, digits split, no normalisation
    train_sentencepiece(texts["en"], base / "tokenizer.model", model_type="bpe", vocab_size=1200,
                        byte_fallback=True, split_digits=True, normalization_rule_name="identity",
                        remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
                        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, character_coverage=0.99995)
    _llama_tokenizer_files(base, chat=False)
    tok = AutoTokenizer.from_pretrained(base)  # converted from tokenizer.model (no tokenizer.json yet)
    tok.backend_tokenizer.save(str(base / "tokenizer.json"))
    for i, folder in enumerate((base, chat_folder)):
        if folder is chat_folder:
            folder.mkdir(parents=True)
            for name in ("tokenizer.model", "tokenizer.json"):
                shutil.copy(base / name, folder / name)
            _llama_tokenizer_files(folder, chat=True)
        config = LlamaConfig(
            vocab_size=len(tok), hidden_size=WIDTH, intermediate_size=3 * WIDTH, num_hidden_layers=32,
            num_attention_heads=HEADS, num_key_value_heads=HEADS, max_position_embeddings=4096, rms_norm_eps=1e-5,
            hidden_act="silu", bos_token_id=1, eos_token_id=2, pad_token_id=None, tie_word_embeddings=False,
            architectures=["LlamaForCausalLM"])
        torch.manual_seed(i)
        model = LlamaForCausalLM(config)
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        model.save_pretrained(folder, max_shard_size=size * 2 // 3)  # two shards and an index, as the hub's
        GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=0, do_sample=True, temperature=0.6, top_p=0.9,
                         max_length=4096).save_pretrained(folder)


def write_t5_small(folder: Path, texts: dict[str, list[str]]) -> None:
    from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration

    folder.mkdir(parents=True)
    train_sentencepiece(texts["en"], folder / "spiece.model", model_type="unigram", vocab_size=1000,
                        pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    _json(folder / "tokenizer_config.json", {
        "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "extra_ids": 100,
        "additional_special_tokens": [f"<extra_id_{i}>" for i in range(100)], "model_max_length": 512,
        "tokenizer_class": "T5Tokenizer"})
    tok = AutoTokenizer.from_pretrained(folder)
    tok.backend_tokenizer.save(str(folder / "tokenizer.json"))
    config = T5Config(
        vocab_size=-(-len(tok) // 128) * 128, d_model=WIDTH, d_kv=WIDTH // HEADS, d_ff=2 * WIDTH, num_layers=6,
        num_decoder_layers=6, num_heads=HEADS, relative_attention_num_buckets=32, dropout_rate=0.1,
        feed_forward_proj="relu", pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
        n_positions=512, architectures=["T5ForConditionalGeneration"])
    _save_random(T5ForConditionalGeneration, config, folder)


def write_models(models: Path, texts: dict[str, list[str]]) -> list[str]:
    """Every model folder under ``models``; the overrides naming them."""
    write_mbart50(models / "mbart-large-50-many-to-many-mmt", texts)
    write_llama2(models / "Llama-2-7b-hf", models / "Llama-2-7b-chat-hf", texts)
    write_t5_small(models / "t5-small", texts)
    return [f"model.seq2seq.name_or_path={models}/mbart-large-50-many-to-many-mmt",
            f"model.lm.name_or_path={models}/Llama-2-7b-hf",
            f"model.lm.chat_name_or_path={models}/Llama-2-7b-chat-hf",
            f"model.re.name_or_path={models}/t5-small"]
