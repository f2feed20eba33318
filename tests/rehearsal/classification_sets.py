"""RE table 10's classification tasks as local files in their published layouts, generated
(`stages.restorable.downstream_data` reads them):

- ``glue/SST-2/{train,dev,test}.tsv``: GLUE's SST-2 (header ``sentence<TAB>label``; test
  ``index<TAB>sentence``, unlabelled);
- ``sst5/{train,dev,test}.jsonl``: SetFit/sst5 (``text``, ``label`` 0-4, ``label_text``);
- ``sst/trees/{train,dev,test}.txt``: the Stanford Sentiment Treebank's PTB trees (root label 0-4);
- ``trec/{train_5500,TREC_10}.label``: Li & Roth's TREC (``COARSE:fine question``, latin-1).

A sentence's label shows in its words (a sentiment word, a question word), so a probe on any
embedding that keeps the words can learn it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SENTIMENT = (("awful", "dreadful"), ("dull", "weak"), ("plain", "ordinary"), ("good", "nice"), ("superb", "brilliant"))
NOUNS = ("film", "story", "cast", "plot", "score", "ending", "script", "scene")
SST5_NAMES = ("very negative", "negative", "neutral", "positive", "very positive")
# (coarse, fine, question start) of TREC's taxonomy (6 coarse labels; a few of the 50 fine ones)
TREC = (("HUM", "ind", "Who invented the"), ("LOC", "city", "Which city has the"), ("NUM", "count", "How many"),
        ("DESC", "def", "What is the meaning of the"), ("ENTY", "animal", "What animal eats the"),
        ("ABBR", "exp", "What does the abbreviation of the"), ("LOC", "country", "Which country makes the"),
        ("NUM", "date", "When was the"))


def _review(rng: random.Random, label: int) -> str:
    return f"the {rng.choice(NOUNS)} is {rng.choice(SENTIMENT[label])} and the {rng.choice(NOUNS)} {rng.choice(('works', 'moves', 'ends'))}"


def sst_rows(seed: int, n: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(_review(rng, label), label) for label in (rng.randrange(5) for _ in range(n))]


def tree(text: str, label: int) -> str:
    """A PTB tree of ``text`` whose root is ``label`` (leaves neutral, 2)."""
    words = text.split()
    inner = f"(2 {words[-1]})"
    for w in reversed(words[:-1]):
        inner = f"(2 (2 {w}) {inner})"
    return f"({label} {inner[3:-1]})" if inner.startswith("(2 ") else f"({label} {inner})"


def write_re_downstream(d: Path) -> list[str]:
    sizes = {"train": 60, "dev": 20, "test": 20}
    glue, sst5, trees, trec = d / "glue/SST-2", d / "sst5", d / "sst/trees", d / "trec"
    for folder in (glue, sst5, trees, trec):
        folder.mkdir(parents=True, exist_ok=True)
    for k, (split, n) in enumerate(sizes.items()):
        rows = sst_rows(k, n)
        binary = [(t, int(label > 2)) for t, label in rows if label != 2]
        if split == "test":
            (glue / "test.tsv").write_text("index\tsentence\n" + "".join(f"{i}\t{t}\n" for i, (t, _) in enumerate(binary)))
        else:
            (glue / f"{split}.tsv").write_text("sentence\tlabel\n" + "".join(f"{t} \t{b}\n" for t, b in binary))
        (sst5 / f"{split}.jsonl").write_text("".join(json.dumps({"text": t, "label": y, "label_text": SST5_NAMES[y]}) + "\n"
                                                     for t, y in rows))
        (trees / f"{split}.txt").write_text("".join(tree(t, y) + "\n" for t, y in rows))
    rng = random.Random(7)
    for name, n in (("train_5500.label", 80), ("TREC_10.label", 24)):
        lines = []
        for _ in range(n):
            coarse, fine, start = rng.choice(TREC)
            lines.append(f"{coarse}:{fine} {start} {rng.choice(NOUNS)} of {rng.choice(('Paris', 'Zürich', 'Oslo'))} ?")
        (trec / name).write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    return [f"data.re_downstream.sst2_dir={glue}", f"data.re_downstream.sst5_dir={trees.parent}",
            f"data.re_downstream.trec_dir={trec}"]
