"""Synthetic stand-ins of the offline sources, in their real on-disk layouts."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from stages.sources.registry import get


def deb_tree(root: Path, name: str, package: str) -> Path:
    tree = root / get(name).folder(package)
    tree.mkdir(parents=True, exist_ok=True)
    (tree / ".complete").write_text("test\n")
    return tree


def write_sword_module(tree: Path, module: str, books: dict[str, list[list[str]]]) -> Path:
    """A zText module (one block per book) with osis2mod's slot layout, NT file empty."""
    folder = tree / "usr/share/sword/modules/texts/ztext" / module
    folder.mkdir(parents=True, exist_ok=True)
    slots: list[tuple[int, str]] = [(0, ""), (0, "<milestone/>")]
    blocks: list[bytes] = []
    for b, (book, chapters) in enumerate(books.items()):
        book_slots = [f'<div type="book" osisID="{book}" sID="x{b}"/>']
        for c, verses in enumerate(chapters, 1):
            book_slots.append(f'<chapter osisID="{book}.{c}" sID="{book}.{c}"/>')
            book_slots += [f'<w lemma="x">{v}</w><note>footnote</note>' for v in verses]
        book_slots[-1] += f'<chapter eID="{book}"/><div type="book" eID="x{b}"/> back matter'
        data = b""
        for s in book_slots:
            slots.append((len(blocks), f"{len(data)}:{s}"))
            data += s.encode()
        blocks.append(data)
    bzz, bzs, bzv = b"", b"", b""
    for data in blocks:
        comp = zlib.compress(data)
        bzs += struct.pack("<III", len(bzz), len(comp), len(data))
        bzz += comp
    for block, spec in slots:
        if ":" in spec and spec.split(":", 1)[0].isdigit():
            off, text = spec.split(":", 1)
            bzv += struct.pack("<IIH", block, int(off), len(text.encode()))
        else:
            bzv += struct.pack("<IIH", 0, 0, 0)
    for ext, data in (("bzs", bzs), ("bzv", bzv), ("bzz", bzz)):
        (folder / f"ot.{ext}").write_bytes(data)
    return folder


def write_bible(root: Path, n_books: int = 2, chapters: int = 3, verses: int = 12) -> None:
    words = "light water earth heaven seed fruit tree day night beast fowl fish".split()
    for package, style in (("sword-text-kjv", "And {a} saw the {b} of the {c} number {i}."),
                           ("sword-text-web", "Then {a} saw {b} and {c}, verse {i}.")):
        books = {
            f"Bk{b}": [[style.format(a=words[(i + b) % 12], b=words[(i * 3) % 12], c=words[(i * 7 + c) % 12], i=i)
                        for i in range(verses)] for c in range(chapters)]
            for b in range(n_books)
        }
        write_sword_module(deb_tree(root, "sword_bible", package), package, books)


def write_debian_reference(root: Path, n_chapters: int = 3, paragraphs: int = 20) -> None:
    for package, lang in (("debian-reference-en", "en"), ("debian-reference-zh-cn", "zh-cn")):
        d = deb_tree(root, "debian_reference", package) / "usr/share/debian-reference"
        d.mkdir(parents=True, exist_ok=True)
        for c in range(n_chapters):
            ps = [f"Paragraph {i} of chapter {c} talks about packages and the <b>system</b> number {i}."
                  if lang == "en" else f"第{c}章第{i}段讨论软件包和系统{i}。" for i in range(paragraphs)]
            (d / f"ch{c:02d}.{lang}.html").write_text("<html><body>" + "".join(f"<p>{p}</p>" for p in ps) + "</body></html>")
        # an appendix translated with a different paragraph count: cannot be aligned
        (d / f"apa.{lang}.html").write_text("<p>a</p>" * (2 if lang == "en" else 3))


def write_python_docs(root: Path, n_docs: int = 3) -> None:
    """reST sources in python3.11-doc's layout, each with a lead and two sections."""
    from stages.sources.python_docs import SOURCES_DIR

    folder = deb_tree(root, "python_docs", "python3.11-doc") / SOURCES_DIR / "library"
    folder.mkdir(parents=True, exist_ok=True)
    body = "The module provides functions for working with {w} data in Python programs. " * 12
    for i, w in enumerate(["json", "csv", "zipfile", "socket", "array"][:n_docs]):
        text = f"{w} module\n{'=' * 20}\n\n{body.format(w=w)}\n\nUsage\n-----\n\n{body.format(w=w)}\n\n" \
               f"Details\n-------\n\n{body.format(w=w)}\n"
        (folder / f"{w}{i}.rst.txt").write_text(text)
