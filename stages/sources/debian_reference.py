"""English–Chinese paragraph pairs from the Debian Reference manual (HTML chapters).

The ``debian-reference-en`` and ``-zh-cn`` packages ship the same DocBook build per
chapter (``chNN.en.html`` / ``chNN.zh-cn.html``). The translation is kept paragraph for
paragraph, so the i-th ``<p>`` of a chapter in one language translates the i-th in the
other. Chapters whose paragraph counts differ (the appendix ``apa``) cannot be aligned
this way and are skipped and reported, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from stages.sources.registry import deb_root
from stages.sources.text_files import read_utf8

HTML_DIR = "usr/share/debian-reference"


class _Paragraphs(HTMLParser):
    """Text of every ``<p>`` element, whitespace collapsed (nested markup flattened)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._buf: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "p":
            self._buf = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._buf is not None:
            self.paragraphs.append(" ".join("".join(self._buf).split()))
            self._buf = None

    def handle_data(self, data: str) -> None:
        if self._buf is not None:
            self._buf.append(data)


def paragraphs(path: Path) -> list[str]:
    parser = _Paragraphs()
    parser.feed(read_utf8(path))
    return parser.paragraphs


@dataclass
class AlignedManual:
    chapters: list[tuple[str, list[tuple[str, str]]]]  # (chapter, [(en, zh), ...])
    skipped_chapters: list[str] = field(default_factory=list)


def align_chapters(en_dir: Path, zh_dir: Path) -> AlignedManual:
    """Pair the paragraphs of each chapter present in both languages, in file order."""
    out = AlignedManual(chapters=[])
    for en_file in sorted(en_dir.glob("*.en.html")):
        chapter = en_file.name.removesuffix(".en.html")
        zh_file = zh_dir / f"{chapter}.zh-cn.html"
        if not zh_file.exists():
            out.skipped_chapters.append(chapter)
            continue
        en, zh = paragraphs(en_file), paragraphs(zh_file)
        if len(en) != len(zh):
            out.skipped_chapters.append(chapter)
            continue
        pairs = [(e, z) for e, z in zip(en, zh, strict=False) if e and z]
        out.chapters.append((chapter, pairs))
    return out


def read(sources_dir: Path) -> AlignedManual:
    en = deb_root(sources_dir, "debian_reference", "debian-reference-en") / HTML_DIR
    zh = deb_root(sources_dir, "debian_reference", "debian-reference-zh-cn") / HTML_DIR
    return align_chapters(en, zh)
