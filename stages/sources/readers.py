"""Read documents out of fetched offline sources (no network, no install)."""

from __future__ import annotations

import bz2
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

from stages.sources.registry import wheel, wheel_path


def _member_bytes(sources_dir: Path, name: str, index: int = 0) -> bytes:
    member = wheel(name).members[index]
    with zipfile.ZipFile(wheel_path(sources_dir, name)) as zf:
        return zf.read(member)


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not valid UTF-8 at byte {exc.start}") from exc


def lee_documents(sources_dir: Path) -> list[str]:
    """The 300 Lee news articles, one string each."""
    text = _decode(_member_bytes(sources_dir, "gensim_lee"), "gensim_lee")
    return [line.strip() for line in text.splitlines() if line.strip()]


def wiki_articles(sources_dir: Path) -> Iterator[tuple[str, str]]:
    """(title, raw wikitext) of each main-namespace article of the shortened dump."""
    xml = _decode(bz2.decompress(_member_bytes(sources_dir, "gensim_wiki")), "gensim_wiki")
    root = ElementTree.fromstring(xml)
    ns = re.match(r"\{.*\}", root.tag)
    prefix = ns.group(0) if ns else ""
    for page in root.iter(f"{prefix}page"):
        if (page.findtext(f"{prefix}ns") or "0") != "0":
            continue
        text = page.findtext(f"{prefix}revision/{prefix}text") or ""
        if text.lstrip().lower().startswith("#redirect"):
            continue
        yield page.findtext(f"{prefix}title") or "", text


def documents(sources_dir: Path, name: str) -> list[str]:
    """Plain documents of a source, for statistics and simple builders."""
    if name == "gensim_lee":
        return lee_documents(sources_dir)
    if name == "gensim_wiki":
        return [text for _, text in wiki_articles(sources_dir)]
    raise KeyError(f"no document reader for source {name!r}")
