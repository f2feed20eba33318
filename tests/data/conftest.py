from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def bpe_dir(tmp_path_factory):
    """A small byte-level BPE (nugget_core's trainer) saved like the tokenizer stage does."""
    from nugget_core import train_bpe_tokenizer

    texts = [f"And word{i % 40} saw the light of day number {i}. 第{i}段讨论软件包和系统。" for i in range(400)]
    out = tmp_path_factory.mktemp("tok") / "tokenizer"
    train_bpe_tokenizer(texts, vocab_size=400, min_frequency=2).save_pretrained(str(out))
    return out
