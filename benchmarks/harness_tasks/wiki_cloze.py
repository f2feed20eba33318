"""Write ``wiki_cloze``, a local lm-evaluation-harness task over real offline text, from the
QA records of a pipeline run (``build_lm``'s ``qa.jsonl``: Wikipedia passages, each with a
sentence of the passage turned into a fill-in-the-blank question; docs/harness.md).

    python benchmarks/harness_tasks/wiki_cloze.py <build_lm output>/qa.jsonl OUT_DIR [--limit N]
    nugget lm-eval --include_path OUT_DIR --tasks wiki_cloze --model nugget2d --model_args ...

Each document is a 4-way multiple choice: the context is the passage, then the question
(``Fill in the blank: ... _____ ...``) and ``Answer:``; the choices are the blanked span and
the spans of the next three records with another answer, in an order fixed by a seeded
shuffle. The answer is in the passage, so a system that loses the passage loses accuracy.
OUT_DIR gets ``wiki_cloze.jsonl`` and ``wiki_cloze.yaml`` (its data file by absolute path:
lm_eval reads ``data_files`` relative to where it runs).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stages.nugget2d.harness.tasks import answer_choice_docs

QUESTION = "Fill in the blank: "
YAML = """task: wiki_cloze
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{document}}}}\\n{{{{question}}}}\\nAnswer:"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""


def cloze_docs(records: list[dict], seed: int = 0) -> list[dict]:
    """One multiple-choice document per record that has a fill-in-the-blank question: eval_harness's
    `answer_choice_docs` (4 choices) on the question without the prompt's lead-in."""
    usable = [r for r in records if QUESTION in r["instruction"] and r["answer"].strip()]
    items = [(r["id"], r["document"], QUESTION + r["instruction"].split(QUESTION, 1)[1].strip(), r["answer"].strip())
             for r in usable]
    docs = answer_choice_docs(items, choices=4, seed=seed)
    return [{**d, "split": r["split"]} for d, r in zip(docs, usable, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("qa_jsonl", type=Path, help="build_lm's qa.jsonl")
    parser.add_argument("out_dir", type=Path, help="where wiki_cloze.jsonl and wiki_cloze.yaml go")
    parser.add_argument("--limit", type=int, default=0, help="first N documents (0 = all)")
    args = parser.parse_args()
    records = [json.loads(line) for line in args.qa_jsonl.read_text().splitlines() if line.strip()]
    docs = cloze_docs(records)
    docs = docs[: args.limit] if args.limit else docs
    args.out_dir.mkdir(parents=True, exist_ok=True)
    data = (args.out_dir / "wiki_cloze.jsonl").resolve()
    data.write_text("".join(json.dumps(d) + "\n" for d in docs))
    (args.out_dir / "wiki_cloze.yaml").write_text(YAML.format(data=data))
    print(f"wrote {len(docs)} documents to {data} and the task wiki_cloze to {args.out_dir / 'wiki_cloze.yaml'}")


if __name__ == "__main__":
    main()
