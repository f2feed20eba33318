"""The reconstruction recipe of ``eval_reconstruction`` (Nugget §5.1) for one loaded system,
callable outside the stage (``nugget eval --task reconstruction``): decode each document from
its encoding with beam search and score corpus BLEU with its 95% bootstrap interval."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from stages.evaluation.metrics import bleu_tokenizer, corpus_bleu_interval, sentence_scores
from stages.evaluation.samples import Sample
from stages.nugget.systems import System, to_record

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from stages.nugget.encoders import LoadedSystem


class Reconstruction(NamedTuple):
    """What `reconstruct` returns: the decoded texts, their corpus BLEU, its 95% bootstrap
    interval over the documents (None below two) and sacrebleu's tokenizer."""

    decoded: list[str]
    bleu: float
    interval: tuple[float, float] | None
    tokenize: str


def decode_limit(tokenizer: PreTrainedTokenizerBase, references: list[str], extra: int) -> int:
    """New tokens that let beam search write the longest reference whole (+ ``extra``)."""
    return max(len(ids) for ids in tokenizer(references)["input_ids"]) + extra


def reconstruct(loaded: LoadedSystem, sources: list[str], references: list[str], batch_size: int,
                beam_size: int, extra_tokens: int) -> Reconstruction:
    """Decode ``sources`` from their encodings (beam ``beam_size``, up to the longest reference
    + ``extra_tokens`` new tokens) and score corpus BLEU against ``references``."""
    hyps = loaded.decode(sources, batch_size, beam_size, decode_limit(loaded.tokenizer, references, extra_tokens))
    tokenize = bleu_tokenizer(references)
    bleu, bounds = corpus_bleu_interval(hyps, references, tokenize=tokenize)
    return Reconstruction(hyps, bleu, bounds, tokenize)


def decoded_samples(system: System, sources: list[str], references: list[str], decoded: list[str], tokenize: str
                    ) -> list[dict[str, Any]]:
    """One sample row (`stages.evaluation.samples`) per document: the ``document`` the encoder
    read, the reference (the document for AE, its translation for MT), the decoded text, its
    sentence BLEU and chrF (``tokenize`` as the corpus BLEU's); settings: the system's fields
    (its training stage as ``trained_by``)."""
    fields = to_record(system)
    settings = {"trained_by" if k == "source" else k: v for k, v in fields.items() if k != "name"}
    return [Sample(i, system.name, {"document": s}, r, d, scores, settings).row()
            for i, (s, r, d, scores) in enumerate(zip(sources, references, decoded,
                                                      sentence_scores(decoded, references, tokenize), strict=True))]
