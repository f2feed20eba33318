"""build_lm's document splits and WikiText text, without Ray: the stage runs with
a stand-in tokenizer (a document's ids name it: ``1000 * doc + position``).

- the splits each output holds are the ones config load promises
  (`stages.config.lm_splits.lm_corpus_splits`), for the offline and the paper data;
- a corpus's LM segments and continuation windows share one document split (the Pile's
  continuation windows were split with another seed: the compressor, the AR model's frozen
  scorer, trained on documents eval_lm scores);
- WikiText-103 reaches table 1 as released (titles, headings, References kept, lines kept).
"""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow.parquet as pq

from stages.config import load_config
from stages.nugget2d import build_lm
from stages.nugget2d.artifacts import BaseLM
from stages.nugget2d.build_lm import BuildLM, Pool
from tests.evaluation.fixtures import artifact, context

SMALL = ["data.lm.distant_tokens=8", "data.lm.recent_tokens=4", "data.lm.doc_tokens=8", "data.lm.prompt_tokens=2",
         "data.lm.answer_tokens=4", "eval.lm.contexts=[{total_states: 6, compressed_tokens: 4, context_tokens: 4}]"]
WORDS = 30  # words (= stand-in tokens) per document: 2 LM segments, 2 continuation windows


def _doc(n: int) -> str:
    return f"doc{n} " + " ".join(["w"] * (WORDS - 1))


def _run(tmp_path, monkeypatch, overrides: list[str], texts=None):
    """BuildLM.run with the stand-in tokenizer (and ``texts`` as its raw pools, if given)."""
    numbers: dict[str, int] = {}

    def encode(items, _tok_dir):
        return [[1000 * numbers.setdefault(t, len(numbers)) + i for i in range(len(t.split()))] for t in items]

    monkeypatch.setattr(build_lm, "encode_texts", encode)
    monkeypatch.setattr(build_lm.raydata, "configure", lambda: None)
    monkeypatch.setattr(BaseLM, "read", classmethod(lambda cls, src, role="lm": SimpleNamespace(path=tmp_path)))
    if texts is not None:
        monkeypatch.setattr(build_lm, "_texts", lambda cfg, sources_dir, cap: texts)
    out = tmp_path / "out"
    ctx = context(BuildLM, {"prepare_lm": artifact("prepare_lm", tmp_path)}, out, [*SMALL, *overrides])
    BuildLM().run(ctx)
    return out, load_config([*SMALL, *overrides]).data.lm


def _docs_by_split(path, part: str) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for row in pq.read_table(path).to_pylist():
        out.setdefault(row["split"], set()).add(row[part][0] // 1000)
    return out


def _offline_pools(n_wiki: int = 40, n_pile: int = 60) -> dict[str, Pool]:
    news = ["First sentence here. Then the body follows. And more of it."] * 4
    passage = "The river rose. Alice met Bob in Paris in 1999. Nothing else happened."
    return {"wiki": Pool.unsplit([_doc(i) for i in range(n_wiki)]),
            "pile": Pool.unsplit([_doc(n_wiki + i) for i in range(n_pile)]),
            "qa": Pool.unsplit([passage] * 4), "summ": Pool.unsplit(news)}


def test_segments_and_continuation_windows_share_one_document_split(tmp_path, monkeypatch):
    out, lm = _run(tmp_path, monkeypatch, ["data.lm.dev_fraction=0.1"], _offline_pools())
    segments = {c: _docs_by_split(out / f"lm_{c}.parquet", "distant") for c in ("wiki", "pile")}
    windows = _docs_by_split(out / "continuation.parquet", "doc")
    scored = segments["wiki"]["test"] | segments["pile"]["test"]  # what eval_lm scores
    assert scored and not windows["train"] & scored  # the compressor never trains on them
    for split in ("train", "dev", "test"):
        assert windows[split] == segments["wiki"][split] | segments["pile"][split]
    from stages.config.lm_splits import lm_corpus_splits

    splits = lm_corpus_splits(lm)  # what config load promised the calibration and eval_lm
    assert {c: tuple(sorted(segments[c])) for c in segments} == {c: tuple(sorted(splits[c])) for c in segments}
    assert sorted(windows) == sorted(splits["continuation"])


def _write(folder, name: str, split: str, columns: dict) -> None:
    import datasets

    datasets.Dataset.from_dict(columns).to_json(folder / f"{name}-{split}.jsonl")


RELEASED = [" = Alpha = \n", " Lead text of Alpha . \n", " = = History = = \n", " Old news . \n",
            " = = = Early life = = = \n", " Born . \n", " = = References = = \n", " A book . \n"]


def test_paper_wikitext_is_scored_as_released_and_holds_no_train_split(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    beta = [" = Beta = \n", f" {_doc(900)} \n", " = = See also = = \n", " Alpha \n"]
    _write(data, "wiki", "validation", {"text": beta})
    _write(data, "wiki", "test", {"text": RELEASED + beta})
    _write(data, "pile", "all", {"text": [_doc(i) for i in range(20)]})
    qa = {"context": ["C"] * 4, "question": ["Q?"] * 4, "answers": [{"text": ["A"], "answer_start": [0]}] * 4}
    for split in ("train", "validation"):
        _write(data, "squad", split, qa)
    for split in ("train", "validation", "test"):
        _write(data, "cnn", split, {"article": ["An article ."] * 2, "highlights": ["h"] * 2})
    files = [f"data.lm.wiki_files={data}/wiki-{{split}}.jsonl", f"data.lm.pile_files={data}/pile-*.jsonl",
             f"data.lm.squad_files={data}/squad-{{split}}.jsonl", f"data.lm.cnn_files={data}/cnn-{{split}}.jsonl"]
    pools = build_lm._paper_pools(load_config(["data=paper", "calibrate=paper", *files]).data.lm)
    alpha = pools["wiki"].items[pools["wiki"].labels.index("test")]
    # every line of the article as WikiText-103 releases it: title, headings, References
    assert alpha == "".join(RELEASED).strip()
    assert alpha.startswith("= Alpha =") and " = = References = =" in alpha and "A book ." in alpha

    from stages.config.lm_splits import lm_corpus_splits

    out, lm = _run(tmp_path, monkeypatch, ["data=paper", "calibrate=paper", *files, "data.lm.dev_fraction=0.1"])
    wiki = _docs_by_split(out / "lm_wiki.parquet", "distant")
    assert sorted(wiki) == sorted(lm_corpus_splits(lm)["wiki"]) == ["dev", "test"]
    assert sorted(_docs_by_split(out / "lm_pile.parquet", "distant")) == ["dev", "test", "train"]


def test_segments_and_windows_name_the_document_they_were_cut_from(tmp_path, monkeypatch):
    """``document_id`` (``<corpus>-<index>``) names each segment's and window's source document:
    the unit eval_lm and eval_nugget2d_ae resample (a document's 2 segments and 2 windows share it)."""
    from collections import Counter

    n_wiki = 40
    out, _ = _run(tmp_path, monkeypatch, ["data.lm.dev_fraction=0.1"], _offline_pools(n_wiki=n_wiki))

    def named(token: int) -> str:  # the stand-in tokenizer numbers the wiki texts first, then the pile's
        doc = token // 1000
        return f"wiki-{doc}" if doc < n_wiki else f"pile-{doc - n_wiki}"

    for path, part in ((out / "lm_wiki.parquet", "distant"), (out / "lm_pile.parquet", "distant"),
                       (out / "continuation.parquet", "doc")):
        rows = pq.read_table(path).to_pylist()
        assert all(r["document_id"] == named(r[part][0]) for r in rows), path.name
        assert set(Counter(r["document_id"] for r in rows).values()) == {2}, path.name  # WORDS: 2 per document
