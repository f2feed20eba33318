"""Offline sources and the corpus_stats / report stages' logic, without Ray."""

from __future__ import annotations

import json

import pytest

from stages.corpora.artifacts import StoredCorpusStatistics
from stages.corpora.corpus_stats import document_counts, summarise, words
from stages.framework.stage import Artifact
from stages.report.html_page import Page
from stages.report.report import corpus_table
from stages.sources.readers import documents, wiki_articles
from stages.sources.registry import SourceMissingError, wheel_path
from tests.framework.fixtures import LEE_DOCS


def test_fake_wheel_is_read_like_the_real_one(sources):
    assert documents(sources, "gensim_lee") == LEE_DOCS
    # talk pages and redirects are skipped
    assert [t for t, _ in wiki_articles(sources)] == ["Alpha", "Gamma", "Delta"]


def test_missing_source_names_package_and_command(tmp_path):
    with pytest.raises(SourceMissingError) as err:
        wheel_path(tmp_path, "gensim_lee")
    msg = str(err.value)
    assert "gensim==4.4.0" in msg and "python -m stages.sources fetch gensim_lee" in msg


def test_non_utf8_source_is_a_clear_error(tmp_path):
    import zipfile

    from stages.sources.registry import get

    src = get("gensim_lee")
    (tmp_path / src.folder).mkdir(parents=True)
    with zipfile.ZipFile(tmp_path / src.folder / "gensim-4.4.0-x.whl", "w") as zf:
        zf.writestr(src.members[0], b"ok line\n\xff\xfe broken\n")
    with pytest.raises(ValueError, match="gensim_lee: not valid UTF-8 at byte 8"):
        documents(tmp_path, "gensim_lee")


def test_counts_and_summary_by_hand():
    assert words("It's 2 o'clock, Bob!") == ["it's", "2", "o'clock", "bob"]
    batch = document_counts({"id": [0, 1], "text": ["A b. C d e!", "no end"]})
    assert batch["words"] == [5, 2] and batch["sentences"] == [2, 1]
    from collections import Counter

    stats = summarise(
        {"words": [5, 2], "sentences": [2, 1], "chars": [11, 6]},
        Counter({"a": 3, "b": 2, "c": 2}),
        top=2,
    )
    assert stats["words_total"] == 7 and stats["words_mean"] == 3.5
    assert stats["vocab_size"] == 3 and stats["type_token_ratio"] == pytest.approx(3 / 7)
    assert stats["top_words"] == [["a", 3], ["b", 2]]


def test_report_renders_stats(tmp_path):
    (tmp_path / "stats.json").write_text(
        json.dumps({"source": "gensim_lee", "documents": 3, "words_mean": 7.6667, "top_words": [["the", 4]]})
    )
    art = Artifact("corpus_stats", "abc", str(tmp_path), tmp_path, {})
    title, rows = corpus_table(StoredCorpusStatistics.read(art))
    page = Page("T")
    page.section(title)
    page.table(["quantity", "value"], rows)
    md = page.markdown()
    assert "| documents | 3 |" in md and "| words_mean | 7.667 |" in md and "the (4)" in md
    assert "<td>documents</td><td class='num'>3</td>" in page.html()
