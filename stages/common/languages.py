"""Language codes of a multilingual seq2seq tokenizer (mBART-50): which code starts each side.

mBART-50's tokenizer writes the *source* language code before the encoder's text
(``src_lang``) and the *target* language code before the labels (``tgt_lang``, used for
``text_target=``); the decoder learns to write in the language whose code it is given
(in generation: ``forced_bos_token_id``). The code of each side must be the language of
that side's text for every objective: an autoencoder reading English writes English, so
both of its codes are ``en_XX`` (Nugget §3.4 / §4: "English documents on both the source
and target sides"); only translation changes the code. The tokenizer saved beside a
trained model carries the codes it was trained with, so evaluation reads them from there.

Tokenizers without language codes (byte-level BPE, T5, the tiny profile's BPE with BART's
``<s> ... </s>`` on both sides) are left as they are: every function here is a no-op or
returns None for them.
"""

from __future__ import annotations

from typing import Any


def has_language_codes(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` codes each side with a language (mBART-50's ``lang_code_to_id``)."""
    return isinstance(getattr(tokenizer, "lang_code_to_id", None), dict)


def set_language_codes(tokenizer: Any, source: str, target: str) -> None:
    """Code the encoder's text with ``source`` and the labels with ``target`` (in place)."""
    known = tokenizer.lang_code_to_id
    for side, code in (("source", source), ("target", target)):
        if code not in known:
            raise ValueError(f"{type(tokenizer).__name__}: {side} language code {code!r} is not one of its "
                             f"{len(known)} codes (e.g. {sorted(known)[:4]})")
    tokenizer.src_lang, tokenizer.tgt_lang = source, target


def target_code_id(tokenizer: Any) -> int | None:
    """The id of the code that starts the labels (the first token the decoder writes, after
    its start token), or None for a tokenizer without language codes."""
    if not has_language_codes(tokenizer):
        return None
    if tokenizer.tgt_lang is None:
        raise ValueError(f"{type(tokenizer).__name__} has language codes but no target language (tgt_lang): "
                         "the model's training set it; a tokenizer not saved by a training task cannot tell it")
    return int(tokenizer.lang_code_to_id[tokenizer.tgt_lang])


def check_writes_its_input(tokenizer: Any, what: str) -> None:
    """Refuse a tokenizer whose labels would start with another code than its inputs:
    teacher-forcing an autoencoder with its input ids as labels needs both codes equal."""
    if has_language_codes(tokenizer) and tokenizer.src_lang != tokenizer.tgt_lang:
        raise ValueError(f"{what}: the model writes {tokenizer.tgt_lang!r} from {tokenizer.src_lang!r} input; "
                         "teacher-forcing its input as the target needs an autoencoder trained with both codes equal")
