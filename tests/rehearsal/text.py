"""Deterministic English-like (and parallel Chinese) text for the rehearsal fixtures.

Sentences come from templates over a small bilingual lexicon, so the English side and the
Chinese side of a pair say the same thing (WMT19-like pairs), every text is reproducible
from a seed, and the vocabulary is varied enough for BM25 mining and sentence splitting.
Nothing here is real data: only its shape (articles, sections, questions) is.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# (English, Chinese) lexicon; English words are single tokens in every fixture tokenizer
NOUNS = [
    ("river", "河流"), ("city", "城市"), ("farmer", "农民"), ("teacher", "老师"), ("bridge", "桥梁"),
    ("village", "村庄"), ("market", "市场"), ("council", "议会"), ("railway", "铁路"), ("harbour", "港口"),
    ("museum", "博物馆"), ("church", "教堂"), ("school", "学校"), ("army", "军队"), ("king", "国王"),
    ("queen", "女王"), ("ship", "船"), ("engine", "发动机"), ("festival", "节日"), ("company", "公司"),
    ("library", "图书馆"), ("garden", "花园"), ("island", "岛屿"), ("mountain", "山脉"), ("forest", "森林"),
    ("storm", "风暴"), ("election", "选举"), ("album", "专辑"), ("team", "球队"), ("player", "球员"),
    ("novel", "小说"), ("painter", "画家"), ("doctor", "医生"), ("hospital", "医院"), ("factory", "工厂"),
    ("road", "道路"), ("castle", "城堡"), ("station", "车站"), ("family", "家庭"), ("student", "学生"),
    ("report", "报告"), ("law", "法律"), ("court", "法院"), ("police", "警察"), ("airport", "机场"),
    ("college", "学院"), ("tower", "塔"), ("valley", "山谷"), ("coast", "海岸"), ("lake", "湖泊"),
]
VERBS = [
    ("built", "建造了"), ("visited", "访问了"), ("opened", "开放了"), ("described", "描述了"), ("praised", "赞扬了"),
    ("replaced", "取代了"), ("moved", "搬迁了"), ("closed", "关闭了"), ("funded", "资助了"), ("studied", "研究了"),
    ("defended", "保卫了"), ("crossed", "穿过了"), ("restored", "修复了"), ("joined", "加入了"), ("founded", "创立了"),
    ("sold", "出售了"), ("won", "赢得了"), ("recorded", "录制了"), ("painted", "画了"), ("reported", "报道了"),
    ("protected", "保护了"), ("expanded", "扩建了"), ("named", "命名了"), ("planned", "计划了"), ("reached", "到达了"),
]
ADJECTIVES = [
    ("old", "古老"), ("new", "新"), ("large", "大"), ("small", "小"), ("famous", "著名"), ("quiet", "安静"),
    ("northern", "北方"), ("southern", "南方"), ("local", "当地"), ("national", "国家"), ("ancient", "古代"),
    ("modern", "现代"), ("busy", "繁忙"), ("royal", "皇家"), ("public", "公共"), ("early", "早期"),
    ("rural", "农村"), ("coastal", "沿海"), ("wooden", "木制"), ("popular", "受欢迎"),
]
TIMES = [("in 1850", "在1850年"), ("in 1912", "在1912年"), ("in 1967", "在1967年"), ("in 2004", "在2004年"),
         ("last year", "去年"), ("in the spring", "在春天"), ("after the war", "战后"), ("during the winter", "在冬天")]
# English-only words: names and places (the rare ones become <unk> in WikiText-103 v1)
NAMES = ["Anna", "Brooks", "Carter", "Diaz", "Evans", "Fischer", "Garcia", "Hughes", "Ivanov", "Jensen",
         "Kowalski", "Larsen", "Moreau", "Nakamura", "Okafor", "Patel", "Quinn", "Rossi", "Schmidt", "Tanaka"]
PLACES = ["Ashford", "Bramley", "Corinth", "Dunmore", "Elmswood", "Fairhaven", "Glenrock", "Harrow",
          "Ivybridge", "Kingsport", "Lindholm", "Marlow", "Northcote", "Oakridge", "Pemberton", "Redcliffe"]
RARE = ["Xylander", "Quistorp", "Vellacott", "Zwingli", "Yoxall", "Wrexley"]  # <unk> in WikiText-103 v1
TITLES = ["Mr.", "Dr.", "Mrs."]  # abbreviations Punkt has to learn not to split after


@dataclass
class Pair:
    en: str
    zh: str


class TextGen:
    """Seeded sentence, paragraph and article generator (``style="wiki"`` spaces out
    punctuation as WikiText-103 does)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def pick(self, items):
        return items[self.rng.randrange(len(items))]

    def pair(self) -> Pair:
        """A sentence and its Chinese counterpart (the same lexicon entries)."""
        (a, a_zh), (n, n_zh), (v, v_zh) = self.pick(ADJECTIVES), self.pick(NOUNS), self.pick(VERBS)
        (a2, a2_zh), (n2, n2_zh), (t, t_zh) = self.pick(ADJECTIVES), self.pick(NOUNS), self.pick(TIMES)
        form = self.rng.randrange(4)
        if form == 0:
            return Pair(f"The {a} {n} {v} the {a2} {n2} {t}.", f"{t_zh}，{a_zh}的{n_zh}{v_zh}{a2_zh}的{n2_zh}。")
        if form == 1:
            return Pair(f"{t.capitalize()}, the {n} {v} a {a2} {n2}.", f"{t_zh}，{n_zh}{v_zh}一个{a2_zh}的{n2_zh}。")
        if form == 2:
            return Pair(f"Many people said that the {n} {v} the {n2}.", f"许多人说{n_zh}{v_zh}{n2_zh}。")
        return Pair(f"The {n2} was {a} and the {n} {v} it {t}.", f"{n2_zh}很{a_zh}，{n_zh}{t_zh}{v_zh}它。")

    def sentence(self) -> str:
        """An English sentence, sometimes with a name, a place, a title or a rare word."""
        base = self.pair().en
        extra = self.rng.randrange(6)
        if extra == 0:
            return f"{self.pick(TITLES)} {self.pick(NAMES)} of {self.pick(PLACES)} said that {base[0].lower()}{base[1:]}"
        if extra == 1:
            return f"{base[:-1]} near {self.pick(PLACES)}."
        if extra == 2:
            return f"According to {self.pick(NAMES)} {self.pick(RARE)}, {base[0].lower()}{base[1:]}"
        return base

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.sentence() for _ in range(sentences))

    def title(self) -> str:
        return f"{self.pick(PLACES)} {self.pick(NOUNS)[0].capitalize()}"


def wiki_tokens(text: str) -> str:
    """WikiText-103's spacing: punctuation split off by spaces, hyphens as ``@-@``."""
    for p in (".", ",", ";", ":"):
        text = text.replace(p, f" {p}")
    return text.replace("-", " @-@ ").replace("Mr .", "Mr.").replace("Dr .", "Dr.").replace("Mrs .", "Mrs.")


def unk_rare(text: str) -> str:
    """WikiText-103 v1: words outside its vocabulary replaced by ``<unk>``."""
    for word in RARE:
        text = text.replace(word, "<unk>")
    return text
