"""Articles split into sections (the passages of the reranking task, Nugget app. A.2).

An :class:`Article` is a title and its sections in order; section 0 is the lead (the
text before the first heading), which build_rr uses as the query. Three readers map
their sources onto it:

- raw MediaWiki markup (gensim's Wikipedia dump): ``== Heading ==`` starts a section,
  deeper headings stay inside it; templates, tables, references, comments, files and
  categories are dropped, links keep their label, bold/italic quotes are removed;
- WikiText-103 raw lines (`` = Title = `` starts an article, `` = = Heading = = `` a
  section);
- Python documentation reST (:mod:`stages.sources.python_docs`).

Reference-like sections (References, External links, See also, ...) are not prose and
are dropped everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from stages.corpora.text import normalise

NON_PROSE = {"references", "external links", "see also", "further reading", "notes",
             "bibliography", "sources", "footnotes", "citations"}

HEADING = re.compile(r"^(={2,})\s*(.*?)\s*\1\s*$")
TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
TABLE = re.compile(r"\{\|.*?\|\}", re.DOTALL)
REF = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.DOTALL | re.IGNORECASE)
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
FILE_LINK = re.compile(r"\[\[(?:File|Image|Category|[a-z]{2,3}(?:-[a-z]+)?):[^\[\]]*(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]", re.IGNORECASE)
LINK = re.compile(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]")
EXT_LINK = re.compile(r"\[(?:https?|ftp)://\S+\s*([^\]]*)\]")
TAGS = re.compile(r"<[^>]+>")
WIKITEXT_TITLE = re.compile(r"^ = ([^=].*?) = $")
WIKITEXT_SECTION = re.compile(r"^ = = ([^=].*?) = = $")
# deeper headings (" = = = Early life = = = "): neither a section of their own nor prose
WIKITEXT_SUBHEADING = re.compile(r"^ (?:= ){3,}.*?(?: =){3,} $")


@dataclass
class Article:
    title: str
    sections: list[tuple[str, str]]  # (heading, text); sections[0] is the lead ("" heading)


def _prose(sections: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(h, t) for h, t in sections if t and h.strip().lower() not in NON_PROSE]


def clean_wiki_markup(text: str) -> str:
    text = COMMENT.sub("", text)
    text = REF.sub("", text)
    text = TABLE.sub("", text)
    for _ in range(10):  # innermost templates first, until none is left
        text, n = TEMPLATE.subn("", text)
        if not n:
            break
    text = FILE_LINK.sub("", text)
    text = LINK.sub(r"\1", text)
    text = EXT_LINK.sub(r"\1", text)
    text = TAGS.sub("", text).replace("'''", "").replace("''", "")
    lines = [line.lstrip("*#:; ") for line in text.splitlines()]
    return normalise(" ".join(line for line in lines if not line.startswith(("|", "!", "{", "}"))))


def from_wiki_markup(title: str, markup: str) -> Article:
    heads: list[str] = [""]
    bodies: list[list[str]] = [[]]  # each section's raw lines
    for line in markup.splitlines():
        m = HEADING.match(line.strip())
        if m and len(m.group(1)) == 2:
            heads.append(clean_wiki_markup(m.group(2)))
            bodies.append([])
        elif not m:
            bodies[-1].append(line)
    # the lead may be empty (an article that opens with a heading): keep its slot so that
    # "section 0 = lead" holds; build_rr skips articles without a usable lead
    lead = clean_wiki_markup("\n".join(bodies[0]))
    rest = _prose((h, clean_wiki_markup("\n".join(b))) for h, b in zip(heads[1:], bodies[1:], strict=False))
    return Article(title, [("", lead)] + rest)


def from_wikitext103(lines: Iterable[str]) -> list[Article]:
    """Articles of the raw WikiText-103 line stream (HF ``text`` column, one line a row)."""
    articles: list[Article] = []
    title: str | None = None
    heads: list[str] = [""]
    bodies: list[list[str]] = [[]]

    def flush() -> None:
        if title is not None:
            secs = [(h, normalise(" ".join(b))) for h, b in zip(heads, bodies, strict=False)]
            articles.append(Article(title, [secs[0]] + _prose(secs[1:])))

    for line in lines:
        line = line.rstrip("\n")
        if m := WIKITEXT_TITLE.match(line):
            flush()
            title, heads, bodies = m.group(1).strip(), [""], [[]]
        elif m := WIKITEXT_SECTION.match(line):
            heads.append(m.group(1).strip())
            bodies.append([])
        elif WIKITEXT_SUBHEADING.match(line):
            continue
        elif line.strip():
            bodies[-1].append(line.strip())
    flush()
    return articles


def wikitext103_documents(lines: Iterable[str]) -> list[str]:
    """The articles of the WikiText-103 line stream as the LM benchmark reads them: every
    line from one `` = Title = `` line to the next, headings included, joined by line
    breaks (no prose filter: language-model perplexity covers the whole text)."""
    docs: list[list[str]] = []
    for line in lines:
        line = line.rstrip("\n")
        if WIKITEXT_TITLE.match(line) or not docs:
            docs.append([])
        docs[-1].append(line)
    return [text for d in docs if (text := "\n".join(d).strip())]


def article_text(article: Article) -> str:
    """An article's sections as one text, a blank line between sections."""
    return "\n\n".join(text for _, text in article.sections)


def from_sections(title: str, sections: list[tuple[str, str]]) -> Article:
    """An article from already-split (heading, text) pairs, lead first."""
    lead = sections[0] if sections and sections[0][0] == "" else ("", "")
    rest = sections[1:] if sections and sections[0][0] == "" else sections
    return Article(title, [lead] + _prose(rest))
