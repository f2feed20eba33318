"""Offline source readers on synthetic files in the real layouts; errors name the fix."""

from __future__ import annotations

import pytest

from stages.sources import debian_reference, python_docs, sword
from stages.sources.registry import SourceMissingError, deb_root
from tests.data.fixtures import deb_tree, write_bible, write_debian_reference


def test_sword_reader_keys_verses_by_position_and_strips_markup(tmp_path):
    write_bible(tmp_path, n_books=2, chapters=2, verses=3)
    kjv = sword.module_dir(deb_root(tmp_path, "sword_bible", "sword-text-kjv"))
    verses = sword.verses(kjv)
    assert list(verses)[:4] == [("Bk0", 1, 1), ("Bk0", 1, 2), ("Bk0", 1, 3), ("Bk0", 2, 1)]
    assert len(verses) == 2 * 2 * 3
    assert verses[("Bk0", 1, 1)] == "And light saw the light of the light number 0."  # no footnote
    assert "back matter" not in verses[("Bk1", 2, 3)]
    web = sword.module_dir(deb_root(tmp_path, "sword_bible", "sword-text-web"))
    pairs = sword.aligned_verses(kjv, web)
    assert [k for k, _, _ in pairs] == list(verses)
    assert pairs[5][2].startswith("Then ")


def test_debian_reference_aligns_by_paragraph_and_skips_unequal_chapters(tmp_path):
    write_debian_reference(tmp_path, n_chapters=2, paragraphs=5)
    manual = debian_reference.read(tmp_path)
    assert manual.skipped_chapters == ["apa"]
    assert [c for c, _ in manual.chapters] == ["ch00", "ch01"]
    en, zh = manual.chapters[1][1][3]
    assert en == "Paragraph 3 of chapter 1 talks about packages and the system number 3."
    assert zh == "第1章第3段讨论软件包和系统3。"


def test_python_docs_sections_drop_directives_and_keep_role_text():
    text = (":tocdepth: 2\n\n=====\nTitle\n=====\n\nLead with :func:`len` here.\n\n"
            ".. note::\n   hidden body\n\nFirst\n-----\n\nSee ``x`` and `Python <https://p.org>`_.\n")
    title, secs = python_docs.sections(text)
    assert title == "Title"
    assert secs == [("", "Lead with len here."), ("First", "See x and Python.")]


@pytest.mark.parametrize("name,package", [("sword_bible", "sword-text-web"), ("debian_reference", "debian-reference-en")])
def test_missing_debian_source_names_package_and_fetch_command(tmp_path, name, package):
    with pytest.raises(SourceMissingError) as err:
        deb_root(tmp_path, name, package)
    msg = str(err.value)
    assert package in msg and f"python -m stages.sources fetch {name}" in msg


def test_interrupted_fetch_counts_as_missing(tmp_path):
    tree = deb_tree(tmp_path, "python_docs", "python3.11-doc")
    (tree / ".complete").unlink()
    with pytest.raises(SourceMissingError):
        python_docs.read(tmp_path)


def test_non_utf8_html_is_a_clear_error(tmp_path):
    write_debian_reference(tmp_path, n_chapters=1, paragraphs=2)
    bad = deb_root(tmp_path, "debian_reference", "debian-reference-en") / "usr/share/debian-reference/ch00.en.html"
    bad.write_bytes(b"<p>ok</p><p>\xff\xfe</p>")
    with pytest.raises(ValueError, match=r"ch00\.en\.html: not valid UTF-8 at byte 12"):
        debian_reference.read(tmp_path)
