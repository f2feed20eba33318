"""docs/own-data.md works as written: its example rows, written to the files its captions
name, are what the data stages' readers return under its override lines, run through the
config loader. The page's snippets are parsed here, so editing them re-tests them."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from stages.config import ConfigError, load_config
from stages.corpora import corpora
from stages.nugget2d import build_lm
from stages.restorable import build_re_data

PAGE = Path(__file__).resolve().parents[2] / "docs" / "own-data.md"
DATA = "/data/own"  # the page's folder, replaced by a temporary one
MODEL = "/models/my-lm"
# a caption line naming the file(s) in backticks, then the ```jsonl block of their rows
EXAMPLE = re.compile(r"^(?P<caption>[^\n]*`" + re.escape(DATA) + r"/[^\n]*)\n\n```jsonl\n(?P<rows>.*?)```", re.M | re.S)
COMMAND = re.compile(r"```bash\n(?P<cmd>nugget run .*?)```", re.S)


def _examples(text: str) -> dict[str, list[dict]]:
    """File name -> its rows, for every example block of the page (siblings named in the
    caption, e.g. "(and `news-test.jsonl` alike)", hold the same rows)."""
    found: dict[str, list[dict]] = {}
    for m in EXAMPLE.finditer(text):
        names = re.findall(r"`([^`]+\.jsonl)`", m["caption"])
        rows = [json.loads(line) for line in m["rows"].splitlines() if line.strip()]
        folder = names[0].rsplit("/", 1)[0]
        for name in names:
            found[name if name.startswith("/") else f"{folder}/{name}"] = rows
    return found


def _commands(text: str) -> list[list[str]]:
    """The override lines of each ``nugget run`` block, shell-parsed as a user's shell would."""
    return [shlex.split(m["cmd"].replace("\\\n", " "))[2:] for m in COMMAND.finditer(text)]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """(the page's examples written under a temporary folder, its override lines pointed there)."""
    root = tmp_path_factory.mktemp("own")
    text = PAGE.read_text(encoding="utf-8")
    examples = _examples(text)
    for name, rows in examples.items():
        path = Path(name.replace(DATA, str(root / "data")))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    commands = [[o.replace(DATA, str(root / "data")).replace(MODEL, str(root / "model")) for o in c]
                for c in _commands(text)]
    return root, examples, commands


def _command(commands: list[list[str]], key: str) -> list[str]:
    (found,) = [c for c in commands if any(o.startswith(key) for o in c)]
    return found


def _rows(examples: dict[str, list[dict]], name: str) -> list[dict]:
    return examples[f"{DATA}/{name}"]


def test_the_page_has_an_example_for_every_file_its_overrides_read(page):
    _, examples, commands = page
    assert len(commands) == 4 and len(examples) == 11
    assert {"qa-train.jsonl", "qa-validation.jsonl", "news-test.jsonl", "wiki-test.jsonl", "mt-train.jsonl",
            "re-validation.jsonl"} <= {n.rsplit("/", 1)[1] for n in examples}


def test_build_lm_reads_the_qa_summary_and_lm_files(page):
    _, examples, commands = page
    data = load_config(_command(commands, "data.lm.source")).data
    pools = build_lm._paper_pools(data.lm)
    qa = dict(zip((item[1] for item in pools["qa"].items), pools["qa"].labels, strict=True))
    assert qa == {"Where does the Loire reach the sea?": build_lm.TRAIN_OR_DEV, "Where was Marie Curie born?": "test"}
    assert ("Marie Curie was born in Warsaw in 1867 and moved to Paris in 1891.", "Where was Marie Curie born?",
            ["Warsaw", "in Warsaw"]) in pools["qa"].items  # every listed answer is gold
    (news,) = _rows(examples, "news-train.jsonl")
    assert pools["summ"].items == [(news["article"], news["highlights"])] * 3
    assert sorted(pools["summ"].labels) == ["dev", "test", "train"]
    assert pools["pile"].items == [_rows(examples, "text.jsonl")[0]["text"]] and pools["pile"].labels == [None]
    wiki = dict(zip(pools["wiki"].labels, pools["wiki"].items, strict=True))
    assert set(wiki) == {"dev", "test"} and "flows north" in wiki["test"] and "= Loire =" in wiki["test"]


def test_the_lm_overrides_need_the_calibration_line_the_page_explains(page):
    _, _, commands = page
    without = [o for o in _command(commands, "data.lm.source") if not o.startswith("calibrate.")]
    with pytest.raises(ConfigError, match="calibrate.threshold"):
        load_config(without)


def test_build_mt_docs_reads_the_parallel_text(page):
    _, examples, commands = page
    mt = load_config(_command(commands, "data.mt.source")).data.mt
    pairs = [p for s in corpora.mt_corpus(mt, Path("/nonexistent")).streams for p in s]
    assert pairs == [(r["translation"]["en"], r["translation"]["zh"]) for r in _rows(examples, "mt-train.jsonl")]


def test_build_re_data_reads_the_texts_to_restore(page):
    _, examples, commands = page
    cfg = load_config(_command(commands, "data.re.source")).data
    by_split, record = build_re_data.documents(cfg.re, Path("/nonexistent"), cfg.seed)
    (text,) = [r["text"] for r in _rows(examples, "re-train.jsonl")]
    for split in ("train", "dev"):
        ((_, sentences),) = list(by_split[split])
        assert " ".join(sentences) == text and len(sentences) == 5
    assert record["splitter"] == "punkt"


def test_a_local_model_folder_is_read_and_its_depth_checked(page, tmp_path):
    root, _, commands = page
    overrides = _command(commands, "model.lm.source")
    folder = root / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 30}))
    assert load_config(overrides).model.lm.name_or_path == str(folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 2}))
    with pytest.raises(ConfigError, match="scorer_layer"):
        load_config(overrides)  # the page's claim: layer indices must fit the folder's depth
