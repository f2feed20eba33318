"""The datasets of profile=paper as local files in their published layouts, generated.

Each writer takes the inputs directory and returns the dotlist overrides naming its files.
Layouts (paths relative to the inputs directory):

- ``wmt19/zh-en/{train-0000k-of-00002,validation-00000-of-00001}.parquet``: HF ``wmt19``
  config ``zh-en``, rows ``translation: {en, zh}``;
- ``wikitext/wikitext-103-{raw-v1,v1}/{train-0000k-of-00002,validation-..,test-..}.parquet``:
  HF ``wikitext``, one ``text`` row per line as released (`` = Title = \\n``,
  `` = = Section = = \\n``, ``""`` between blocks; ``<unk>`` in v1);
- ``squad/plain_text/{train,validation}-00000-of-00001.parquet``: HF ``squad``;
- ``cnn_dailymail/3.0.0/{train,validation,test}-*.parquet``: HF ``cnn_dailymail``;
- ``pile/train/00.jsonl.zst``: the Pile's ``{"text", "meta": {"pile_set_name"}}`` lines;
- ``c4/realnewslike/c4-{train,validation}.0000k-of-0000n.json.gz``: allenai/c4's files;
- ``parabank/parabank-1.0-small-diverse.tsv``: ParaBank v1 (score, sentence, paraphrases);
- ``dpr/retriever/{nq-train,nq-dev}.json``, ``dpr/retriever/qas/nq-test.csv``,
  ``dpr/wikipedia_split/psgs_w100.tsv``: DPR's release;
- RE table 10's GLUE SST-2, SST (PTB trees) and TREC files (`tests.rehearsal.classification_sets`).

Sizes: enough for every split a stage reads at profile=paper's relations (LM segments of
704 + 128 LLaMA tokens, 19 BM25 negatives, documents of <= 128 / 256 mBART tokens, ...).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.rehearsal.classification_sets import write_re_downstream
from tests.rehearsal.text import NAMES, NOUNS, PLACES, VERBS, TextGen, unk_rare, wiki_tokens


def _parquet_shards(folder: Path, split: str, rows: list[dict], shards: int = 1) -> None:
    """``<split>-0000k-of-0000n.parquet``, the HF hub's parquet naming: consecutive rows
    per shard (WikiText's lines stay in order)."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(rows) // shards)
    for k in range(shards):
        part = rows[k * size : (k + 1) * size]
        pq.write_table(pa.Table.from_pylist(part), folder / f"{split}-{k:05d}-of-{shards:05d}.parquet")


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def write_wmt19(d: Path) -> list[str]:
    """WMT19 zh-en: train (2 shards) and validation sentence pairs."""
    gen = TextGen(19)
    for split, n, shards in (("train", 640, 2), ("validation", 96, 1)):
        pairs = [gen.pair() for _ in range(n)]
        _parquet_shards(d / "wmt19/zh-en", split, [{"translation": {"en": p.en, "zh": p.zh}} for p in pairs], shards)
    return [f"data.mt.local_files={d}/wmt19/zh-en/{{split}}-*.parquet"]


def _wiki_article(gen: TextGen, sections: int, paragraphs: int, sentences: int) -> list[str]:
    """One WikiText-103 article as released: a line per row, blank rows around headings."""
    lines = ["", f" = {gen.title()} = \n", ""]
    lines += [f" {wiki_tokens(gen.paragraph(sentences))} \n" for _ in range(2)]
    for s in range(sections):
        lines += ["", f" = = {gen.pick(NOUNS)[0].capitalize()} {s + 1} = = \n", ""]
        if s == 1:  # a deeper heading stays inside its section
            lines += ["", f" = = = {gen.pick(PLACES)} = = = \n", ""]
        lines += [f" {wiki_tokens(gen.paragraph(sentences))} \n" for _ in range(paragraphs)]
    if gen.rng.random() < 0.3:  # not prose: build_rr drops it
        lines += ["", " = = References = = \n", "", f" {gen.pick(NAMES)} , 1999 . \n"]
    return lines


def write_wikitext103(d: Path) -> list[str]:
    """WikiText-103 raw-v1 and v1 (the same text, rare words ``<unk>`` in v1): many short
    articles in train (build_rr's queries and sections), a few long ones in validation and
    test (each > 704 + 128 LLaMA tokens: build_lm's LM segments)."""
    gen = TextGen(103)
    splits = {"train": [_wiki_article(gen, 3, 2, 3) for _ in range(36)],
              "validation": [_wiki_article(gen, 6, 4, 5) for _ in range(4)],
              "test": [_wiki_article(gen, 6, 4, 5) for _ in range(4)]}
    for config, edit in (("wikitext-103-raw-v1", str), ("wikitext-103-v1", unk_rare)):
        for split, articles in splits.items():
            rows = [{"text": edit(line)} for article in articles for line in article]
            _parquet_shards(d / "wikitext" / config, split, rows, 2 if split == "train" else 1)
    raw, v1 = (f"{d}/wikitext/{c}/{{split}}-*.parquet" for c in ("wikitext-103-raw-v1", "wikitext-103-v1"))
    return [f"data.rr.local_files={raw}", f"data.nugget_lm.wiki_files={v1}", f"data.lm.wiki_files={v1}"]


def _fact(gen: TextGen, used: set) -> tuple[str, str, str]:
    """(sentence, question, answer) about a fresh (noun, place, verb): one answer each."""
    while True:
        noun, place, (verb, _) = gen.pick(NOUNS)[0], gen.pick(PLACES), gen.pick(VERBS)
        if (noun, place, verb) not in used:
            used.add((noun, place, verb))
            name = f"{gen.pick(NAMES)} {gen.pick(NAMES)}"
            return f"The {noun} of {place} was {verb} by {name} in {1800 + gen.rng.randrange(220)}.", \
                f"who {verb} the {noun} of {place}", name


def write_squad(d: Path) -> list[str]:
    """SQuAD v1.1 plain_text: contexts of a few sentences, three questions each, answers
    spans of the context (validation: three annotators' answers, as released)."""
    gen, used = TextGen(11), set()
    for split, contexts in (("train", 16), ("validation", 6)):
        rows = []
        for c in range(contexts):
            title = gen.title().replace(" ", "_")
            facts = [_fact(gen, used) for _ in range(3)]
            context = " ".join(f"{gen.paragraph(2)} {sentence}" for sentence, _, _ in facts)
            for q, (sentence, question, answer) in enumerate(facts):
                start = context.index(sentence) + sentence.index(answer)
                texts = [answer] * (3 if split == "validation" else 1)
                rows.append({"id": _digest(f"{split}{c}{q}")[:24], "title": title, "context": context,
                             "question": question[0].upper() + question[1:] + "?",
                             "answers": {"text": texts, "answer_start": [start] * len(texts)}})
        _parquet_shards(d / "squad/plain_text", split, rows)
    return [f"data.lm.squad_files={d}/squad/plain_text/{{split}}-*.parquet"]


def write_cnn_dailymail(d: Path) -> list[str]:
    """CNN/DailyMail 3.0.0: ``article`` (a dateline, then paragraphs), ``highlights``
    (sentences ending `` .`` joined by line breaks), ``id`` (a SHA-1)."""
    gen = TextGen(30)
    for split, n, shards in (("train", 24, 3), ("validation", 8, 1), ("test", 8, 1)):
        rows = []
        for _ in range(n):
            article = f"{gen.pick(PLACES).upper()}, England (CNN) -- " + " ".join(gen.paragraph(5) for _ in range(4))
            highlights = "\n".join(gen.sentence()[:-1] + " ." for _ in range(3))
            rows.append({"article": article, "highlights": highlights, "id": _digest(article)})
        _parquet_shards(d / "cnn_dailymail/3.0.0", split, rows, shards)
    return [f"data.lm.cnn_files={d}/cnn_dailymail/3.0.0/{{split}}-*.parquet"]


PILE_SETS = ["Pile-CC", "Wikipedia (en)", "PubMed Abstracts", "FreeLaw", "StackExchange", "HackerNews"]


def write_pile(d: Path) -> list[str]:
    """A Pile train file as monology/pile-uncopyrighted publishes them (``train/00.jsonl.zst``,
    zstandard-compressed JSON lines): long documents (several 832-token LM segments each)."""
    import zstandard

    gen = TextGen(800)
    path = d / "pile/train/00.jsonl.zst"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(16):
        text = "\n\n".join(gen.paragraph(6) for _ in range(22))
        lines.append(json.dumps({"text": text, "meta": {"pile_set_name": PILE_SETS[i % len(PILE_SETS)]}}) + "\n")
    path.write_bytes(zstandard.ZstdCompressor().compress("".join(lines).encode("utf-8")))
    return [f"data.lm.pile_files={d}/pile/train/*.jsonl.zst"]


def read_pile(d: Path) -> list[dict]:
    """The rows `write_pile` wrote."""
    import zstandard

    raw = zstandard.ZstdDecompressor().stream_reader((d / "pile/train/00.jsonl.zst").open("rb")).read()
    return [json.loads(line) for line in raw.decode("utf-8").splitlines()]


def write_c4_realnewslike(d: Path) -> list[str]:
    """allenai/c4 realnewslike: gzipped JSON lines ``{"text", "timestamp", "url"}``, an
    article's paragraphs separated by line breaks."""
    gen = TextGen(4)
    folder = d / "c4/realnewslike"
    folder.mkdir(parents=True, exist_ok=True)
    for split, shards, per_shard in (("train", 2, 40), ("validation", 1, 16)):
        for k in range(shards):
            with gzip.open(folder / f"c4-{split}.{k:05d}-of-{512 if split == 'train' else 1:05d}.json.gz", "wt",
                           encoding="utf-8") as fh:
                for i in range(per_shard):
                    text = "\n".join(gen.paragraph(gen.rng.randrange(2, 5)) for _ in range(gen.rng.randrange(2, 5)))
                    fh.write(json.dumps({"text": text, "timestamp": f"2019-04-{10 + i % 19:02d}T08:{i % 60:02d}:00Z",
                                         "url": f"https://news.example.com/{split}/{k}/{i}"}) + "\n")
    return [f"data.re.local_files={folder}/c4-{{split}}.*.json.gz"]


SYNONYMS = [("built", "constructed"), ("large", "big"), ("famous", "well-known"), ("old", "aged"),
            ("Many people", "Several people"), ("said", "stated"), ("city", "town"), ("visited", "toured"),
            ("small", "little"), ("closed", "shut"), ("moved", "relocated"), ("quiet", "calm")]


def _paraphrase(sentence: str, variant: int) -> str:
    out = sentence
    for i, (a, b) in enumerate(SYNONYMS):
        if (i + variant) % 2 == 0:
            out = out.replace(a, b)
    return out if out != sentence else f"It is said that {sentence[0].lower()}{sentence[1:]}"


def write_parabank(d: Path) -> list[str]:
    """ParaBank v1: ``score<TAB>sentence<TAB>paraphrase...`` per line, in document order."""
    gen = TextGen(1)
    path = d / "parabank/parabank-1.0-small-diverse.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for _ in range(900):
        s = gen.sentence()
        paraphrases = [_paraphrase(s, v) for v in range(1 + gen.rng.randrange(3))]
        lines.append("\t".join([f"{-gen.rng.random():.4f}", s, *paraphrases]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [f"data.pi.parabank_path={path}"]


def _ctx(p: dict) -> dict:
    return {"title": p["title"], "text": p["text"], "score": 0, "title_score": 0, "passage_id": p["id"]}


def write_dpr_nq(d: Path) -> list[str]:
    """DPR's Natural Questions: 100-word passages (``psgs_w100.tsv``, texts quoted as
    released), biencoder train / dev questions whose positive is one of them, with
    negatives and hard negatives (passages of the same title), and the test questions."""
    gen, used = TextGen(21), set()
    passages, facts = [], []
    for t in range(40):
        title = gen.title()
        for _ in range(6):
            sentence, question, answer = _fact(gen, used)
            text = f"{gen.paragraph(3)} {sentence} {gen.paragraph(3)}"
            passages.append({"id": str(len(passages) + 1), "title": title, "text": text, "group": t})
            facts.append((question, answer))
    order = gen.rng.sample(range(len(passages)), len(passages))
    folder = d / "dpr"
    (folder / "retriever/qas").mkdir(parents=True, exist_ok=True)
    (folder / "wikipedia_split").mkdir(parents=True, exist_ok=True)
    for name, picks in (("nq-train.json", order[:96]), ("nq-dev.json", order[96:120])):
        rows = []
        for i in picks:
            same = [p for p in passages if p["group"] == passages[i]["group"] and p is not passages[i]]
            others = [passages[j] for j in gen.rng.sample(range(len(passages)), 6) if j != i][:5]
            rows.append({"dataset": "nq_train_psg_compare", "question": facts[i][0], "answers": [facts[i][1]],
                         "positive_ctxs": [_ctx(passages[i])], "negative_ctxs": [_ctx(p) for p in others],
                         "hard_negative_ctxs": [_ctx(p) for p in same]})
        (folder / "retriever" / name).write_text(json.dumps(rows, indent=4), encoding="utf-8")
    (folder / "retriever/qas/nq-test.csv").write_text(
        "".join(f"{facts[i][0]}\t{[facts[i][1]]!r}\n" for i in order[120:150]), encoding="utf-8")
    quoted = ('"' + p["text"].replace('"', '""') + '"' for p in passages)
    (folder / "wikipedia_split/psgs_w100.tsv").write_text(
        "id\ttext\ttitle\n" + "".join(f"{p['id']}\t{q}\t{p['title']}\n" for p, q in zip(passages, quoted, strict=True)),
        encoding="utf-8")
    return [f"data.re_retrieval.nq_train_file={folder}/retriever/nq-train.json",
            f"data.re_retrieval.nq_dev_file={folder}/retriever/nq-dev.json",
            f"data.re_retrieval.nq_test_file={folder}/retriever/qas/nq-test.csv",
            f"data.re_retrieval.passages_file={folder}/wikipedia_split/psgs_w100.tsv"]


WRITERS = (write_wmt19, write_parabank, write_wikitext103, write_squad, write_cnn_dailymail, write_pile,
           write_c4_realnewslike, write_dpr_nq, write_re_downstream)


def corpus_texts(d: Path) -> dict[str, list[str]]:
    """Text the fixture tokenizers are trained on: English (every dataset's kind of text)
    and Chinese (WMT19's target side)."""
    en, zh = [], []
    for path in sorted((d / "wmt19").rglob("*.parquet")):
        for row in pq.read_table(path).column("translation").to_pylist():
            en.append(row["en"])
            zh.append(row["zh"])
    for path in sorted((d / "wikitext/wikitext-103-v1").glob("*.parquet")):
        en += [t for t in pq.read_table(path).column("text").to_pylist() if t.strip()]
    en += [row["text"] for row in read_pile(d)]
    en += (d / "parabank/parabank-1.0-small-diverse.tsv").read_text(encoding="utf-8").splitlines()
    return {"en": en, "zh": zh}
