"""The reconstruction recipe of ``eval_reconstruction`` (Nugget §5.1) for one loaded system,
callable outside the stage (``nugget eval --task reconstruction``): decode each document from
its encoding with beam search and score corpus BLEU, keeping each document's BLEU statistics
(`stages.common.resampling.UnitSample`: its 95% interval resamples the documents)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from stages.common.resampling import UnitSample
from stages.evaluation.metrics import bleu_statistics, bleu_tokenizer, sentence_scores
from stages.evaluation.samples import Sample
from stages.nugget.systems import System, to_record

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from stages.nugget.encoders import LoadedSystem


class Reconstruction(NamedTuple):
    """What `reconstruct` returns: the decoded texts, the BLEU statistics of each document
    (``units``: its ``value()`` is the corpus BLEU, its ``interval()`` the 95% bootstrap interval over
    the documents) and sacrebleu's tokenizer."""

    decoded: list[str]
    units: UnitSample
    tokenize: str


def decode_limit(tokenizer: PreTrainedTokenizerBase, references: list[str], extra: int) -> int:
    """New tokens that let beam search write the longest reference whole (+ ``extra``)."""
    return max(len(ids) for ids in tokenizer(references)["input_ids"]) + extra


def reconstruct(loaded: LoadedSystem, sources: list[str], references: list[str], ids: Sequence[str],
                batch_size: int, beam_size: int, extra_tokens: int) -> Reconstruction:
    """Decode ``sources`` from their encodings (beam ``beam_size``, up to the longest reference
    + ``extra_tokens`` new tokens) and score BLEU against ``references``, per document (``ids``:
    each document's unit id, the same in every system's sample)."""
    hyps = loaded.decode(sources, batch_size, beam_size, decode_limit(loaded.tokenizer, references, extra_tokens))
    tokenize = bleu_tokenizer(references)
    return Reconstruction(hyps, UnitSample.of("document", "bleu", ids, bleu_statistics(hyps, references, tokenize)),
                          tokenize)


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
