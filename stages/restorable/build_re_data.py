"""Stage ``build_re_data``: the texts the RE models embed and restore (RE §4.1).

``data.re.source=c4_realnewslike`` (profile=paper): C4 RealNewsLike as published, its
train split for training and its validation split (13,863 articles) for evaluation, each
article's ``text`` cut into sentences. An offline source (profile=tiny: ``gensim_wiki``)
gives its texts per article / book / document, a labelled stand-in, split train / dev by
whole document with ``data.seed`` (no document feeds both splits), then into sentences.

Sentences (``data.re.sentence_splitter``): the paper uses NLTK's sentence tokenizer,
Punkt with NLTK's pretrained English parameters, which are data that is not downloaded;
``punkt`` trains Punkt here on the first ``punkt_train_documents`` train documents of the
source (`stages.restorable.sentences`: it learns abbreviations such as "Mr.", "U.S.", "Jan."),
then splits every document with it, and writes what it learned to ``punkt.json``;
``rules`` is the rule-based `stages.corpora.text.split_sentences` (no abbreviations). A KJV
verse (``sword_bible``) stays one unit either way.

For each ``data.re.sentence_counts`` k, every document is cut into non-overlapping
windows of k sentences (`stages.restorable.restoration_texts`); train and dev are each a
seeded sample (``max_train_examples`` / ``max_dev_examples``, 0 = all) in a seeded
random order, streamed: memory holds the cap (or a shuffle buffer), one document's
sentences and the output files' handles, never the corpus.
Output: `stages.restorable.artifacts.RestorationTexts`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from stages.corpora import paper_sources as paper
from stages.corpora.corpora import english_texts, split_streams
from stages.corpora.splits import assign_splits
from stages.corpora.text import split_sentences
from stages.framework.contract import NoInputs, section
from stages.framework.stage import Stage, StageContext
from stages.restorable.artifacts import RestorationTexts
from stages.restorable.restoration_texts import Example, SeededSample, WindowCounts, cut, word_count
from stages.restorable.sentences import PunktSplitter, train_punkt

if TYPE_CHECKING:
    from stages.restorable.config import REData

C4 = "c4_realnewslike"
C4_SPLITS = {"train": "train", "dev": "validation"}  # ours -> C4's published splits
PUNKT = "punkt.json"  # what Punkt learned (data.re.sentence_splitter=punkt)
PAPER_MEAN_TOKENS = {1: 33, 3: 96, 5: 156}  # RE §4.1's mean text lengths (tokens) by sentence count

Document = tuple[str, list[str]]  # (id, sentences)


def documents(cfg: REData, sources_dir: Path, seed: int) -> tuple[dict[str, Iterator[Document]], dict[str, Any]]:
    """Per split (train, dev), its documents as (id, sentences), in source order, and how
    they were split (`sentence_splitter`'s record). C4's are read lazily (ids: row numbers
    within the published split); an offline source's are split by whole document (ids:
    positions in the source's reading order)."""
    if cfg.source == C4:
        train = paper.iter_texts(paper.load_rows(C4, C4_SPLITS["train"], cfg.local_files), f"{C4} split 'train'")
        split, record = sentence_splitter(cfg, train)
        return {ours: _c4_documents(theirs, cfg.local_files, split) for ours, theirs in C4_SPLITS.items()}, record
    texts = english_texts(cfg.source, sources_dir)
    if not texts:
        raise ValueError(f"data.re.source: {cfg.source!r} yielded no documents")
    labels = assign_splits(len(texts), cfg.dev_fraction, 0.0, seed)
    # a document's texts (sections) joined as paragraphs: Punkt learns that a paragraph starts a sentence
    split, record = sentence_splitter(cfg, ("\n\n".join(t) for t, label in zip(texts, labels, strict=True)
                                            if label == "train"))
    streams = split_streams(cfg.source, texts, split)
    return {part: iter([(str(i), s) for i, (s, label) in enumerate(zip(streams, labels, strict=True))
                        if label == part])
            for part in ("train", "dev")}, record


def sentence_splitter(cfg: REData, train_texts: Iterator[str]) -> tuple[Callable[[str], list[str]], dict[str, Any]]:
    """``data.re.sentence_splitter``: the rule-based `split_sentences`, or Punkt trained on
    the first ``punkt_train_documents`` of ``train_texts`` (`stages.restorable.sentences`); with
    a record of it for ``stats.json`` / ``punkt.json``."""
    if cfg.sentence_splitter == "rules":
        return split_sentences, {"splitter": "rules"}
    taken = [0]  # documents learned from, counted as they stream in (C4's train split is not held)

    def counted() -> Iterator[str]:
        for text in islice(train_texts, cfg.punkt_train_documents or None):
            taken[0] += 1
            yield text

    tick = time.time()
    splitter = PunktSplitter(train_punkt(counted()))
    if not taken[0]:
        raise ValueError(f"data.re.sentence_splitter=punkt: source {cfg.source!r} has no train document to learn from")
    learned = splitter.summary()
    print(f"[build_re_data] Punkt trained on {taken[0]} train documents in {time.time() - tick:.1f}s: "
          f"{len(learned['abbreviations'])} abbreviations", flush=True)
    return splitter, {"splitter": "punkt", "punkt_documents": taken[0], **learned}


def _c4_documents(split: str, local_files: str, splitter: Callable[[str], list[str]]) -> Iterator[Document]:
    rows = paper.load_rows(C4, split, local_files)
    for i, text in enumerate(paper.iter_texts(rows, f"{C4} split {split!r}")):
        yield str(i), splitter(text)


class _Writer:
    """One output file, written line by line; counts examples and words."""

    def __init__(self, handle: IO[str]):
        self.handle, self.examples, self.words = handle, 0, 0

    def write(self, ex: Example) -> None:
        self.handle.write(json.dumps(ex, ensure_ascii=False) + "\n")
        self.examples += 1
        self.words += word_count(ex["text"])


@dataclass(frozen=True)
class REDataConfig:
    re: REData = section("data.re")
    seed: int = section("data.seed")


class BuildREData(Stage[REDataConfig, NoInputs, RestorationTexts]):
    name = "build_re_data"
    external_paths = ("data.re.local_files",)

    @classmethod
    def offline_sources(cls, sections: dict[str, Any]) -> tuple[str, ...]:
        source = sections["data.re"].source
        return () if source == C4 else (source,)

    def compute(self, ctx: StageContext, config: REDataConfig, inputs: NoInputs) -> None:
        cfg, seed = config.re, config.seed
        caps = {"train": cfg.max_train_examples, "dev": cfg.max_dev_examples}
        dropped = {k: WindowCounts() for k in cfg.sentence_counts}
        writers: dict[tuple[int, str], _Writer] = {}
        with ExitStack() as files:
            parts, splitting = documents(cfg, ctx.sources_dir, seed)
            for split, docs in parts.items():
                samples = {}
                for k in cfg.sentence_counts:
                    path = RestorationTexts.file_of(ctx.output_dir, k, split)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    writers[k, split] = _Writer(files.enter_context(path.open("w", encoding="utf-8")))
                    samples[k] = SeededSample(caps[split], f"build_re_data:{seed}:{split}:{k}", writers[k, split].write)
                for doc, sentences in docs:
                    for k, sample in samples.items():
                        for ex in cut(doc, sentences, k, cfg.max_words, dropped[k]):
                            sample.add(ex)
                for sample in samples.values():
                    sample.finish()
        empty = [f"{split} of {k} sentences" for (k, split), w in writers.items() if not w.examples]
        if empty:
            raise ValueError(f"build_re_data: source {cfg.source!r} gave no examples for {', '.join(empty)} "
                             f"(data.re.max_words={cfg.max_words}, data.re.dev_fraction={cfg.dev_fraction})")

        counts, metrics = {}, {}
        for k in cfg.sentence_counts:
            train, dev = writers[k, "train"], writers[k, "dev"]
            n = train.examples + dev.examples
            counts[str(k)] = {"train": train.examples, "dev": dev.examples,
                              "mean_words": (train.words + dev.words) / n,
                              "dropped_long": dropped[k].dropped_long, "dropped_tail": dropped[k].dropped_tail}
            metrics.update({f"n{k}.train_examples": train.examples, f"n{k}.dev_examples": dev.examples,
                            f"n{k}.mean_words": counts[str(k)]["mean_words"], f"n{k}.mean_words_n": n,
                            f"n{k}.dropped_long": dropped[k].dropped_long,
                            f"n{k}.dropped_tail": dropped[k].dropped_tail})
            print(f"[build_re_data] {k} sentences: {train.examples} train / {dev.examples} dev examples, "
                  f"{counts[str(k)]['mean_words']:.1f} words on average"
                  + (f" (RE §4.1: {PAPER_MEAN_TOKENS[k]} T5 tokens)" if k in PAPER_MEAN_TOKENS else ""), flush=True)
        stand_in = "" if cfg.source == C4 else f"{cfg.source} sentences (stand-in for C4 RealNewsLike)"
        ctx.log_artifact(ctx.write_json(RestorationTexts.STATS, {"source": cfg.source, "stand_in": stand_in,
                                                                 "splitter": splitting["splitter"], "counts": counts}))
        if splitting["splitter"] == "punkt":
            ctx.log_artifact(ctx.write_json(PUNKT, splitting))
            metrics.update({"punkt_documents": splitting["punkt_documents"],
                            "punkt_abbreviations": len(splitting["abbreviations"])})
        ctx.set_tags({"stand_in": stand_in or "none"})
        ctx.log_metrics(metrics)
