"""Sectioned technical articles from the Python documentation reST sources.

``python3.11-doc`` ships ``html/_sources/**/*.rst.txt``. A section starts at a reST
title (a text line underlined, and optionally overlined, by one repeated punctuation
character at least as long as the text). Directive blocks (``.. name::`` and their
indented bodies, comments, targets) and field-list lines are dropped; inline roles and literals keep their
visible text. The document title is the first title; text before the first real section
is the lead.
"""

from __future__ import annotations

import re
from pathlib import Path

from stages.sources.registry import deb_root
from stages.sources.text_files import read_utf8

SOURCES_DIR = "usr/share/doc/python3.11/html/_sources"
ADORNMENT = re.compile(r"^([=\-~^*#\"'`:.+_<>])\1{2,}\s*$")
FIELD = re.compile(r"^:[\w-]+:(\s|$)")  # document-level field lists (":tocdepth: 2")
ROLE = re.compile(r":[\w:.-]+:`([^`<]*?)\s*(?:<[^>]*>)?`")
LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")
LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`_?")

Section = tuple[str, str]  # (heading, text)


def _inline(text: str) -> str:
    text = ROLE.sub(r"\1", text)
    text = LINK.sub(r"\1", text)
    text = LITERAL.sub(lambda m: m.group(1) or m.group(2), text)
    return " ".join(text.split())


def _drop_directives(lines: list[str]) -> list[str]:
    """Remove ``..`` blocks: the marker line and the indented lines that follow it."""
    out, in_block = [], False
    for line in lines:
        if line.startswith("..") or FIELD.match(line):
            in_block = True
            continue
        if in_block and (not line.strip() or line[:1].isspace()):
            continue
        in_block = False
        out.append(line)
    return out


def sections(text: str) -> tuple[str, list[Section]]:
    """(document title, [(heading, text), ...]) with the lead as the first section."""
    lines = _drop_directives(text.splitlines())
    title, heads = "", [""]
    bodies: list[list[str]] = [[]]
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not ADORNMENT.match(line) and ADORNMENT.match(nxt) and len(
            nxt.rstrip()
        ) >= len(line.rstrip()):
            if bodies[-1] and ADORNMENT.match(bodies[-1][-1]):
                bodies[-1].pop()  # the overline belongs to this title
            if not title:
                title = line.strip()  # the document title opens the lead
            else:
                heads.append(line.strip())
                bodies.append([])
            i += 2
            continue
        bodies[-1].append(line)
        i += 1
    out = [(h, _inline(" ".join(b))) for h, b in zip(heads, bodies, strict=False)]
    return title, [(h, t) for h, t in out if t]


def read(sources_dir: Path) -> list[tuple[str, list[Section]]]:
    """(title, sections) of every reST source, in path order."""
    root = deb_root(sources_dir, "python_docs", "python3.11-doc") / SOURCES_DIR
    docs = []
    for path in sorted(root.rglob("*.rst.txt")):
        title, secs = sections(read_utf8(path))
        docs.append((title or path.stem, secs))
    return docs
