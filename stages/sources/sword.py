"""Pure-Python reader of SWORD ``zText`` Bible modules (no libsword, no ``mod2imp``).

A zText module stores each testament in three files: ``.bzs`` (12-byte records:
offset, size, uncompressed size of each zlib block), ``.bzv`` (10-byte records per
versification slot: block, offset in the block, size) and ``.bzz`` (the blocks).
Slots run in versification order: module heading, testament heading, then per book a
book-intro slot and per chapter a chapter-heading slot followed by the verses. The
OSIS markup of osis2mod modules puts ``<div type="book" osisID=..>`` in the book-intro
slot and ``<chapter osisID="Book.N">`` in the chapter-heading slot, so verse numbers
follow from slot positions without a versification table. That lets two modules with
different versifications (KJV; WEB uses NRSVA) be joined on (book, chapter, verse).

Verse text: footnotes (``<note>``) and headings (``<title>``) are dropped, other tags
are stripped keeping their text, anything after a chapter/book end milestone is cut, entities unescaped, whitespace collapsed.
"""

from __future__ import annotations

import html
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

BOOK = re.compile(r'<div\b[^>]*\btype="book"[^>]*>')
BOOK_START = re.compile(r'\bsID=')
OSIS_ID = re.compile(r'\bosisID="([^"]+)"')
CHAPTER = re.compile(r'<chapter\b[^>]*\bosisID="([^".]+)\.(\d+)"[^>]*\bsID=')
DROP = re.compile(r"<(note|title)\b[^>]*?(?<!/)>.*?</\1>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")
# a chapter/book end milestone closes the verse: what follows (e.g. WEB's glossary after
# Rev 22:21) is back matter, not verse text
END = re.compile(r'<chapter\b[^>]*\beID=|<div\b(?=[^>]*\btype="book")[^>]*\beID=')

VerseKey = tuple[str, int, int]


def module_dir(tree: Path) -> Path:
    """The single zText module folder inside an unpacked ``sword-text-*`` package."""
    found = sorted(tree.glob("usr/share/sword/modules/texts/ztext/*/"))
    if len(found) != 1:
        raise ValueError(f"{tree}: expected one SWORD zText module, found {found}")
    return found[0]


def _slots(folder: Path, testament: str) -> Iterator[str]:
    """Raw OSIS text of every slot of one testament (``ot`` or ``nt``), in order."""
    bzs, bzv, bzz = (folder / f"{testament}.{ext}" for ext in ("bzs", "bzv", "bzz"))
    if not bzv.exists():
        return
    blocks = [struct.unpack_from("<III", data, i) for data in [bzs.read_bytes()]
              for i in range(0, len(data) - 11, 12)]
    compressed = bzz.read_bytes()
    cache: dict[int, bytes] = {}
    index = bzv.read_bytes()
    for i in range(0, len(index) - 9, 10):
        block, offset, size = struct.unpack_from("<IIH", index, i)
        if size == 0:
            yield ""
            continue
        if block not in cache:
            start, length, _ = blocks[block]
            cache.clear()  # slots come in block order: keep one block in memory
            cache[block] = zlib.decompress(compressed[start:start + length])
        raw = cache[block][offset:offset + size]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{folder}/{testament}.bzz: slot {i // 10} is not valid UTF-8 at byte {exc.start}"
            ) from exc


def clean_verse(osis: str) -> str:
    end = END.search(osis)
    osis = osis[: end.start()] if end else osis
    text = TAG.sub("", DROP.sub("", osis)).replace("¶", "")
    return " ".join(html.unescape(text).split())


def verses(folder: Path) -> dict[VerseKey, str]:
    """{(book osisID, chapter, verse): plain text} of a module, in canonical order."""
    out: dict[VerseKey, str] = {}
    for testament in ("ot", "nt"):
        book, chapter, verse = "", 0, 0
        for slot in _slots(folder, testament):
            chap = CHAPTER.search(slot)
            book_div = next((m for m in BOOK.finditer(slot) if BOOK_START.search(m.group(0))), None)
            if book_div and not chap:
                ids = OSIS_ID.search(book_div.group(0))
                book, chapter, verse = (ids.group(1) if ids else ""), 0, 0
                continue
            if chap:
                book, chapter, verse = chap.group(1), int(chap.group(2)), 0
                continue
            if not chapter:
                continue  # module / testament heading slots
            verse += 1
            text = clean_verse(slot)
            if text:
                out[(book, chapter, verse)] = text
    return out


def aligned_verses(left: Path, right: Path) -> list[tuple[VerseKey, str, str]]:
    """Verses present in both modules, in the left module's order."""
    a, b = verses(left), verses(right)
    return [(key, text, b[key]) for key, text in a.items() if key in b]
