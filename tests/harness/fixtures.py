"""A tiny random LLaMA saved as an HF folder (with a byte-level BPE tokenizer), an
untrained Nugget2D folder over it, and local lm-evaluation-harness tasks (JSON data files,
no download) for the harness tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.lm_eval.fixtures import make_base_lm, smollm2_style_tokenizer

SENTENCES = [
    "The river delta was mapped in the spring by two surveyors from the city.",
    "Paris and London exchanged letters about the physics module for a decade.",
    "A gamma ray burst was recorded by the observatory on the third night.",
    "The document summarizes the answer to every question asked in the hall.",
    "She was born in a small town near the coast and moved to the capital.",
    "Data from the python survey showed that most snakes avoid open fields.",
]
CHOICES = [" city.", " coast.", " night.", " hall."]


@dataclass(frozen=True)
class TinyFolders:
    hf: Path  # the base LM + tokenizer (an HF model folder)
    nugget2d: Path  # an untrained Nugget2D folder over it (LoRA B = 0: phi = theta = the base LM)
    tasks: Path  # the task YAMLs (--include_path)


def contexts() -> list[str]:
    """Contexts of 31-116 tokens (the tiny tokenizer): sentences, the last one cut before its final word."""
    out = []
    for i in range(len(SENTENCES)):
        text = " ".join(SENTENCES[i:] + SENTENCES[:i])[: 60 + 25 * i]
        out.append(text.rsplit(" ", 1)[0])
    return out


def write_tasks(folder: Path) -> Path:
    """``tiny_cloze`` (multiple_choice: loglikelihood requests) and ``tiny_rolling``
    (loglikelihood_rolling) over JSONL files beside the YAMLs."""
    folder.mkdir(parents=True, exist_ok=True)
    cloze = folder / "cloze.jsonl"
    cloze.write_text("".join(json.dumps({"context": c, "choices": CHOICES, "label": i % len(CHOICES)}) + "\n"
                             for i, c in enumerate(contexts())))
    rolling = folder / "rolling.jsonl"
    rolling.write_text("".join(json.dumps({"text": s + " " + SENTENCES[(i + 1) % len(SENTENCES)]}) + "\n"
                               for i, s in enumerate(SENTENCES)))
    (folder / "tiny_cloze.yaml").write_text(f"""task: tiny_cloze
dataset_path: json
dataset_kwargs:
  data_files:
    test: {cloze}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{context}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
""")
    (folder / "tiny_rolling.yaml").write_text(f"""task: tiny_rolling
dataset_path: json
dataset_kwargs:
  data_files:
    test: {rolling}
test_split: test
output_type: loglikelihood_rolling
doc_to_text: ""
doc_to_target: "{{{{text}}}}"
metric_list:
  - metric: word_perplexity
  - metric: byte_perplexity
  - metric: bits_per_byte
""")
    return folder


def make_folders(root: Path) -> TinyFolders:
    from nugget_core.checkpoint import BaseModelReference
    from nugget_core.nugget2d import Nugget2DConfig, Nugget2DModel, save_nugget2d

    tokenizer = smollm2_style_tokenizer(SENTENCES * 3 + CHOICES, vocab_size=300)
    hf = root / "hf"
    base = make_base_lm(len(tokenizer))
    base.save_pretrained(str(hf))
    tokenizer.save_pretrained(str(hf))
    model = Nugget2DModel(make_base_lm(len(tokenizer)), Nugget2DConfig(lora_rank=4, lora_alpha=4, scorer_layer=1,
                                                                       ratio=0.5)).eval()
    folder = root / "nugget2d"
    save_nugget2d(model, folder, BaseModelReference.of(hf, folder))
    return TinyFolders(hf, folder, write_tasks(root / "tasks"))
