"""Tiny MT-docs artifacts (the build_mt_docs / tokenizer contracts) for training tests."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import nn

from stages.config import load_config
from stages.training.task_steps import checkpointing_unsupported

WORDS = "the cat dog sat ran on mat rug red blue big small a one two and it was".split()


def make_docs(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        sents = [" ".join(rng.choices(WORDS, k=rng.randint(3, 6))) + "." for _ in range(rng.randint(1, 3))]
        source = " ".join(sents)
        rows.append({
            "doc_id": f"d{seed}-{i}",
            "source": source,
            "target": source.upper(),  # a deterministic "translation"
            "source_sentences": sents,
            "target_sentences": [s.upper() for s in sents],
            "n_source_tokens": 0,
            "n_target_tokens": 0,
        })
    return rows


def make_mt_artifacts(root: Path, n_train: int = 64, n_dev: int = 16) -> tuple[Path, Path]:
    """(data_dir with train/dev/test parquet, tokenizer_dir)."""
    from nugget_core import train_bpe_tokenizer

    data = root / "mt"
    data.mkdir(parents=True)
    splits = {"train": make_docs(n_train, 1), "dev": make_docs(n_dev, 2), "test": make_docs(n_dev, 3)}
    for name, rows in splits.items():
        pq.write_table(pa.Table.from_pylist(rows), data / f"{name}.parquet")
    texts = [r[k] for rows in splits.values() for r in rows for k in ("source", "target")]
    tok = train_bpe_tokenizer(texts, vocab_size=300)
    tok_dir = root / "tokenizer"
    tok.save_pretrained(tok_dir)
    return data, tok_dir


def make_mbart50_tokenizer(directory: Path, src_lang: str = "en_XX", tgt_lang: str = "zh_CN") -> Path:
    """A tiny tokenizer of mBART-50's class and layout (fairseq specials, its 52 language
    codes, ``<mask>``) over `WORDS` and their upper-case "translations", saved as the
    tokenizer stage saves a pretrained one (the corpus's codes as ``src_lang`` / ``tgt_lang``)."""
    from transformers import MBart50Tokenizer

    pieces = [f"▁{w}" for w in WORDS] + [f"▁{w.upper()}" for w in WORDS] + ["."]
    vocab = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0)] + [(p, -1.0) for p in pieces]
    MBart50Tokenizer(vocab=vocab, src_lang=src_lang, tgt_lang=tgt_lang).save_pretrained(directory)
    return directory


def nugget_job(**overrides):
    """tiny's ``train.nugget`` job with ``overrides`` set (an engine's or the loop's input)."""
    job = load_config([]).train.nugget
    for k, v in overrides.items():
        setattr(job, k, v)
    return job


class ScalarRowsTask:
    """What the loop tests' toy tasks share: rows are floats, a batch ``{"x": [rows]}`` counts
    one token per row, the model is a 2-parameter module saved as ``weights_file`` whose
    output has ``.loss`` / ``.logits``."""

    find_unused_parameters = False
    weights_file = "toy.pt"

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        raise checkpointing_unsupported(self)

    @staticmethod
    def loss(forward, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return forward(**batch).loss

    @staticmethod
    def logits(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return model(**batch).logits

    def n_target_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        return batch["x"].shape[0]

    def n_tokens(self, batch: dict[str, torch.Tensor]) -> int:
        return batch["x"].shape[0]

    def parameter_counts(self, model: nn.Module) -> dict[str, int]:
        return {"params.trainable": 2, "params.frozen": 0}

    def export(self, model: nn.Module, directory: Path) -> None:
        directory.mkdir(parents=True)
        torch.save(model.state_dict(), directory / self.weights_file)
