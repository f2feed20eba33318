"""The MLflow Model (pyfunc flavour) of an exported model folder: `ModelFolder` loads the
folder with nugget_core and ``predict`` answers texts (and questions) with what the kind
of model is for.

This file is the model's code (MLflow "models from code"): `stages.training.model_card`
logs it with the folder as the artifact ``model`` (or, above the size limit, a reference
to the published folder) and nugget_core as a code path, so loading the model needs
only the pip requirements it records, not this repository. It therefore imports nothing
of ``stages``; what it needs arrives in the artifact ``settings`` (a JSON file):

- ``kind``: the `stages.training.model_card.ModelKind` name (``Nugget``, ``Nugget2D``, ...);
- ``reference``: the folder's place under the artifact root, read when ``model`` was not
  copied;

and the model config's ``artifact_root`` (adapter checkpoints find their base LM inside
it), which the loader may override: ``mlflow.pyfunc.load_model(uri,
model_config={"artifact_root": ...})``.

``predict`` takes a list of texts or a DataFrame with a ``text`` column (and a
``question`` column for the Nugget2D / ICAE / LoRA kinds: answers instead of
continuations) and returns one output per text: the text decoded back from its nuggets
(Nugget), the answer or continuation from the compressed text (Nugget2D), the text
restored from ICAE's memory slots, perplexity and next tokens (Nugget LM), the embedding
(RE, bottleneck) or the generated text (LoRA).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlflow.models import set_model
from mlflow.pyfunc import PythonModel

MAX_NEW_TOKENS = 32


def _rows(model_input: Any) -> list[tuple[str, str]]:
    """(text, question) per row of a list of texts or a DataFrame (``text``, optional ``question``)."""
    if isinstance(model_input, str):
        model_input = [model_input]
    if hasattr(model_input, "columns"):
        if "text" not in model_input.columns:
            raise ValueError(f"predict: the DataFrame needs a 'text' column, got {list(model_input.columns)}")
        questions = model_input["question"] if "question" in model_input.columns else [""] * len(model_input)
        return [(str(t), str(q or "")) for t, q in zip(model_input["text"], questions, strict=True)]
    return [(str(t), "") for t in model_input]


class ModelFolder(PythonModel):
    """A pipeline model folder behind MLflow's pyfunc interface (module docstring)."""

    def load_context(self, context: Any) -> None:
        import json

        from transformers import AutoTokenizer

        # the logged settings, then what the loader overrides (load_model(..., model_config=...))
        config = {**json.loads(Path(context.artifacts["settings"]).read_text()), **(context.model_config or {})}
        self.kind = config["kind"]
        root = config.get("artifact_root") or None
        copied = context.artifacts.get("model")
        folder = Path(copied) if copied else Path(root or ".") / config["reference"]
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: the model folder is not here; it was not copied into the MLflow "
                                    "model (above its size limit): pass model_config={'artifact_root': ...}")
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
        self.model = self._load(folder, root)

    def _load(self, folder: Path, root: str | None) -> Any:
        if self.kind == "Nugget":
            from nugget_core import NuggetModel
            return NuggetModel.from_pretrained(folder).eval()
        if self.kind == "Nugget2D":
            from nugget_core.nugget2d import load_nugget2d
            return load_nugget2d(folder, base_within=root).eval()
        if self.kind == "ICAE":
            from nugget_core.nugget2d import load_icae
            return load_icae(folder, base_within=root).eval()
        if self.kind == "Nugget LM":
            from nugget_core import NuggetLM
            return NuggetLM.from_pretrained(folder).eval()
        if self.kind == "RE restorable embedding":
            from nugget_core import RestorableModel
            return RestorableModel.from_pretrained(folder)
        if self.kind == "bottleneck baseline":
            from nugget_core.baselines import BottleneckModel
            return BottleneckModel.from_pretrained(folder)
        if self.kind == "LoRA adapter":
            from peft import PeftModel
            from transformers import AutoModelForCausalLM

            from nugget_core import BaseModelReference
            base = BaseModelReference.load(folder).resolve(folder, within=root)
            causal = AutoModelForCausalLM.from_pretrained(base, trust_remote_code=False)
            return PeftModel.from_pretrained(causal, str(folder)).eval()
        raise ValueError(f"no pyfunc wrapper for model kind {self.kind!r}")

    # model_input unannotated: MLflow reads its hint as a schema (list[...] only) and warns on any other
    # (it still advises adding hints once)
    def predict(self, context: Any, model_input, params: dict[str, Any] | None = None) -> Any:
        """One output per row of ``model_input`` (a list of texts or a DataFrame: module docstring)."""
        import torch

        # no_grad here, not set_grad_enabled(False) at load: that switched autograd off for the
        # whole process that loaded the model (a training stage in the same worker, the tests)
        with torch.no_grad():
            return [self._one(text, question) for text, question in _rows(model_input)]

    def _one(self, text: str, question: str) -> Any:
        tok, model = self.tokenizer, self.model
        ids = tok([text], return_tensors="pt")
        if self.kind in ("Nugget", "bottleneck baseline", "RE restorable embedding"):
            if self.kind == "Nugget":
                out = model.generate(ids.input_ids, ids.attention_mask, max_new_tokens=MAX_NEW_TOKENS)
                return tok.decode(out[0], skip_special_tokens=True)
            return model.embed(ids.input_ids, ids.attention_mask)[0].float().tolist()
        if self.kind == "Nugget2D":
            from nugget_core import answer, compress_text, continue_text
            if question:
                return answer(model, tok, compress_text(model, tok, text), question, max_new_tokens=MAX_NEW_TOKENS)
            return continue_text(model, tok, compress_text(model, tok, text, prompt_format=None),
                                 max_new_tokens=MAX_NEW_TOKENS)
        if self.kind == "ICAE":
            from nugget_core.nugget2d.generation import generate_from_context
            out = generate_from_context(model.nugget2d, model.compress(ids.input_ids, ids.attention_mask),
                                        max_new_tokens=MAX_NEW_TOKENS, eos_token_id=tok.eos_token_id,
                                        pad_token_id=tok.pad_token_id or 0, soft_prompt=True)
            return tok.decode(out.tokens[0], skip_special_tokens=True)
        if self.kind == "Nugget LM":
            window = ids.input_ids
            if window.shape[1] < 2:
                raise ValueError(f"predict: {text!r} has {window.shape[1]} token(s); perplexity needs 2 or more")
            out = model(window[:, :-1], labels=window[:, 1:])
            return {"perplexity": float(out.loss.exp()),  # and the predicted token after each position
                    "next_tokens": tok.convert_ids_to_tokens(out.logits[0].argmax(-1).tolist())}
        prompt = tok([f"{text} {question}".strip()], return_tensors="pt")  # LoRA adapter (a causal LM)
        out = model.generate(**prompt, max_new_tokens=MAX_NEW_TOKENS)
        return tok.decode(out[0, prompt.input_ids.shape[1]:], skip_special_tokens=True)


set_model(ModelFolder())
