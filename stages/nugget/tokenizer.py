"""Stage ``tokenizer``: the subword tokenizer of the Nugget encoder-decoder.

- ``model.seq2seq.source == "tiny_random"``: a byte-level BPE
  (:func:`nugget_core.train_bpe_tokenizer`) trained on BOTH sides of the MT corpus
  (English sources, Chinese targets) and on the English-only corpora of
  ``data.mt.ae_sources``, ``model.seq2seq.tokenizer_vocab_size`` types.
  Training on the data (not a fixed vocabulary) is what makes a tiny random BART usable
  offline; it sees every split's text, which only affects segmentation, not labels.
- ``"pretrained"``: ``AutoTokenizer.from_pretrained(model.seq2seq.name_or_path)``; for
  mBART-50 the saved ``src_lang`` / ``tgt_lang`` are the corpus's two languages
  (``data.mt.src_lang/tgt_lang``); each training task recodes them for its objective
  (`stages.nugget.nugget_task.NuggetTask.language_codes`: AE writes its input's language).

Output: ``tokenizer/`` (a HF ``save_pretrained`` folder) and ``stats.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stages.corpora.corpora import english_corpus, mt_corpus, mt_offline_sources
from stages.framework.contract import NoInputs, section
from stages.framework.stage import Stage, StageContext
from stages.nugget.artifacts.data import TokenizerFolder

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from stages.config.schema import Seq2SeqModel
    from stages.nugget.config import MTData


@dataclass(frozen=True)
class TokenizerConfig:
    model: Seq2SeqModel = section("model.seq2seq")
    mt: MTData = section("data.mt")


class Tokenizer(Stage[TokenizerConfig, NoInputs, TokenizerFolder]):
    name = "tokenizer"
    resources = {"num_cpus": 1}
    external_paths = ("data.mt.local_files",)
    external_models = ("model.seq2seq.name_or_path",)

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        tiny = sections["model.seq2seq"].source == "tiny_random"  # BPE trained on the corpus
        return mt_offline_sources(sections["data.mt"]) if tiny else ()

    def compute(self, ctx: StageContext, config: TokenizerConfig, inputs: NoInputs) -> None:
        model, mt = config.model, config.mt
        stats: dict[str, float] = {}
        tok: PreTrainedTokenizerBase  # a trained fast BPE, or whichever class the pretrained model names
        if model.source == "tiny_random":
            from nugget_core import train_bpe_tokenizer

            corpus = mt_corpus(mt, ctx.sources_dir)
            texts = [side for stream in corpus.streams for pair in stream for side in pair]
            if mt.ae_sources:  # one side of each (unit, unit) pair
                english = english_corpus(list(mt.ae_sources), ctx.sources_dir)
                texts += [unit for stream in english.streams for unit, _ in stream]
            tok = train_bpe_tokenizer(texts, vocab_size=model.tokenizer_vocab_size, min_frequency=2)
            stats["training_texts"] = len(texts)
        elif model.source == "pretrained":
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(model.name_or_path, trust_remote_code=False)
            if "mbart" in type(tok).__name__.lower():
                tok.src_lang, tok.tgt_lang = mt.src_lang, mt.tgt_lang
        else:
            raise ValueError(f"model.seq2seq.source: unknown value {model.source!r}")
        TokenizerFolder.write(ctx.output_dir, tok)
        stats["vocab_size"] = len(tok)
        ctx.log_artifact(ctx.write_json("stats.json", {**stats, "source": model.source}))
        ctx.log_metrics(stats)
