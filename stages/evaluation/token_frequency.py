"""Nugget fig. 5 as pure functions: which tokens become nuggets, counted per document.

Every token is counted as the word it spells (`readable_token`), so a token and its
word-initial variant ('the', 'Ġthe') are one word; each share is a sample of documents
(`share_units`: the nugget tokens of one document are not independent, the documents are),
so it gets its 95% bootstrap interval over documents (`stages.common.resampling`).

Shared by stage ``analyze_nuggets`` and the headline burst (``benchmarks/headline``), which
runs on a GPU image without the pipeline's framework: nothing here imports Ray or MLflow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from nugget_core import Nuggets
from stages.common.degenerate import constant_outputs
from stages.common.resampling import UnitSample
from stages.common.tokens import display_token
from stages.evaluation.analysis import TokenStats, is_punctuation, spells

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

TOP_TOKENS = 6  # paper fig. 5
Interval = tuple[float, float] | None


def readable_token(tokenizer: PreTrainedTokenizerBase, token: str) -> str:
    """A token as a word: its decoded text as `display_token` shows it (no word-start
    marker or space, so 'the' and 'Ġthe' are one word; whitespace named); a byte-level
    piece of a character (a Chinese character split in two tokens decodes to U+FFFD)
    keeps its BPE form, marked, so that different pieces stay apart."""
    text = tokenizer.convert_tokens_to_string([token])
    if "\ufffd" in text:
        return f"{display_token(token)} (part of a character)"
    return display_token(text)


def selection_flag(stats: TokenStats) -> str:
    """Why a scorer's selection is uninformative (`stages.common.degenerate`): the same nugget
    positions in most documents (it ignores what the document says); "" when it is not."""
    flag = constant_outputs(stats.positions)
    return f"nugget positions: {flag}" if flag else ""


def share_units(stats: TokenStats, top: list[str], ids: list[str]) -> dict[str, Any]:
    """Per share of a model's record (`NuggetAnalysis.SHARE_KEYS`, then ``top/<i>/share_nuggets`` /
    ``top/<i>/share_text`` of its i-th top nugget token ``top[i]``) the sample of documents behind it
    (`TokenStats.share_sample`, unit ids ``ids``)."""
    counted = {"the": spells("the"), "punctuation": is_punctuation}
    samples = {f"{what}_share_{side}": stats.share_sample(side, counts, ids)
               for what, counts in counted.items() for side in ("nuggets", "text")}
    for i, token in enumerate(top):
        samples |= {f"top/{i}/share_{side}": stats.share_sample(side, token.__eq__, ids) for side in ("nuggets", "text")}
    return samples


def add_selections(stats: TokenStats, word: Callable[[str], str], tokenizer: PreTrainedTokenizerBase,
                   input_ids: torch.Tensor, attention_mask: torch.Tensor, nuggets: Nuggets
                   ) -> list[tuple[list[str], tuple[int, ...]]]:
    """Add one encoded batch (right-padded ``input_ids`` / ``attention_mask [batch, n]`` and its
    `Nuggets`) to ``stats``, each token counted as ``word(token)``; per document, its words and
    its nuggets' token positions."""
    documents = []
    for ids, mask, idx, nmask in zip(input_ids, attention_mask, nuggets.indices, nuggets.mask, strict=True):
        tokens = [word(t) for t in tokenizer.convert_ids_to_tokens(ids[mask.bool()].tolist())]
        chosen = set(idx[nmask.bool()].tolist())
        stats.add(tokens, [i in chosen for i in range(len(tokens))])
        documents.append((tokens, stats.positions[-1]))
    return documents


def frequency_summary(stats: TokenStats, ids: list[str], top_n: int = TOP_TOKENS, intervals: bool = True
                      ) -> tuple[dict[str, Any], dict[str, UnitSample], dict[str, Interval]]:
    """One model's fig. 5 record: its ``top_n`` nugget tokens ``[token, share of nuggets, share of
    text]`` (%), the punctuation and 'the' shares, the counts, each share's documents (``units``)
    and, from `MIN_UNITS` documents, its interval (``intervals``; none computed with
    ``intervals=False``, e.g. where scipy's bootstrap is not installed: the ``units`` allow it
    later); also the samples and intervals themselves (for metrics)."""
    top = [t for t, _ in stats.nuggets.most_common(top_n)]
    units = share_units(stats, top, ids)
    bounds = {k: u.interval() if intervals else None for k, u in units.items()}
    record = {"top": [[t, stats.share(stats.nuggets, t), stats.share(stats.text, t)] for t in top],
              "punctuation_share_nuggets": stats.punctuation_share(stats.nuggets),
              "punctuation_share_text": stats.punctuation_share(stats.text),
              "the_share_nuggets": stats.word_share(stats.nuggets, "the"),
              "the_share_text": stats.word_share(stats.text, "the"),
              "n_nuggets": sum(stats.nuggets.values()), "n_tokens": sum(stats.text.values()), "n_docs": len(ids),
              "units": {k: u.to_json() for k, u in units.items()},
              "intervals": {k: list(b) for k, b in bounds.items() if b is not None}}
    return record, units, bounds
