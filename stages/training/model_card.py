"""What every exported model folder carries beyond its weights: a model card, a portable
base-model reference (adapter checkpoints), and a copy in the stage's MLflow run.

A training stage calls `document_models` once its model folders are in their final
place in the stage output (references are relative to that place). For each folder:

- ``README.md``: a model card (what it is, how it was trained and on what data, its
  final metrics, how to load it outside the pipeline), Hugging Face style with a YAML
  header;
- adapter checkpoints (Nugget2D, ICAE, the Full-FT LoRA): ``base_model.json``
  (`nugget_core.checkpoint.BaseModelReference`) and peft configs without the training
  machine's absolute path;
- the folder logged as artifacts ``models/<folder>`` of the stage's MLflow run, unless it
  exceeds `MLFLOW_MODEL_MAX_MB` (then a tag says where the model is and why it was not
  copied: an MLflow store is not the place for multi-GB full fine-tunes).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from stages.common.progress import dev_loss_rose
from stages.framework.stage import StageContext
from stages.training.loop import STATE_FILE

if TYPE_CHECKING:
    from stages.config.job import TrainJob
    from stages.config.schema import CausalLM
    from stages.training.task import TrainingTask

# Folders above this size are not copied into MLflow (tiny and LoRA models are far below;
# a BART-large full fine-tune is ~1.6 GB in fp32).
MLFLOW_MODEL_MAX_MB = 1024
# the model's own configuration files, shown in its card
CONFIG_FILES = ("nugget2d_config.json", "usage.json", "nugget_config.json", "nugget_lm_config.json",
                "bottleneck_config.json")
BaseModelReferenceLike = Any  # nugget_core.checkpoint.BaseModelReference (imported lazily)


@runtime_checkable
class OnBaseLM(Protocol):
    """A task training adapters on a base LM: its prepare_lm folder (the tasks of `stages.nugget2d.lm_task`)."""

    base_dir: str


@dataclass(frozen=True)
class ModelKind:
    """A kind of model folder: the file that marks it, what it is, how to load it."""

    marker: str
    name: str
    what: str
    load: str  # Python, with {path} (the model folder) and {root} (the artifact root)
    adapters: tuple[str, ...] = ()  # peft adapter sub-folders (adapter checkpoints), "." for the folder itself


KINDS = (  # most specific first: an ICAE folder is also a Nugget2D folder
    ModelKind("icae_memory.safetensors", "ICAE", "ICAE baseline (in-context autoencoder): LoRA adapters, "
              "memory slots and the Nugget2D parts on a frozen decoder-only LM.",
              "from nugget_core.nugget2d import load_icae\nmodel = load_icae({path!r}, base_within={root!r})",
              ("adapters/compressor", "adapters/decoder")),
    ModelKind("nugget2d_config.json", "Nugget2D", "Nugget2D: LoRA adapters phi (compressor) and theta (decoder), "
              "the nugget scorer and the soft prompt on a frozen decoder-only LM; the base LM is not stored here "
              "(base_model.json says where it is).",
              "from nugget_core.nugget2d import load_nugget2d\nmodel = load_nugget2d({path!r}, base_within={root!r})",
              ("adapters/compressor", "adapters/decoder")),
    ModelKind("nugget_lm_config.json", "Nugget LM", "Nugget LM: a seq2seq decoder reading the current window, "
              "its cross-attention reading a memory of earlier segments.",
              "from nugget_core import NuggetLM\nmodel = NuggetLM.from_pretrained({path!r})"),
    ModelKind("nugget_scorer.safetensors", "Nugget", "Nugget: an encoder-decoder whose decoder cross-attends only "
              "to the encoder states its scorer selects (the nuggets).",
              "from nugget_core import NuggetModel\nmodel = NuggetModel.from_pretrained({path!r})"),
    ModelKind("restorable_config.json", "RE restorable embedding", "RE (restorable embeddings): an encoder "
              "whose pooled, projected state is one vector per text, and a decoder (input / cross / gating) "
              "restoring the text from it.",
              "from nugget_core.restorable import RestorableModel\nmodel = RestorableModel.from_pretrained({path!r})"),
    ModelKind("bottleneck.safetensors", "bottleneck baseline", "A single-vector bottleneck baseline (TSDAE / RE) "
              "of the Nugget experiments.",
              "from nugget_core.baselines import BottleneckModel\nmodel = BottleneckModel.from_pretrained({path!r})"),
    ModelKind("adapter_config.json", "LoRA adapter", "A LoRA adapter (peft) fine-tuning the full base LM: the "
              "Full fine-tuned baseline.",
              "from peft import PeftModel\nfrom transformers import AutoModelForCausalLM\n"
              "base = AutoModelForCausalLM.from_pretrained(BASE)  # base_model.json: where BASE is\n"
              "model = PeftModel.from_pretrained(base, {path!r})", (".",)),
)


def kind_of(folder: Path) -> ModelKind | None:
    return next((k for k in KINDS if (folder / k.marker).is_file()), None)


def published(ctx: StageContext, folder: Path) -> str:
    """Where ``folder`` (inside the stage's scratch output) will be once the stage is
    published: ``<stage>/<key>/<folder>`` under the artifact root."""
    return f"{ctx.stage}/{ctx.key}/{folder.relative_to(ctx.output_dir).as_posix()}"


def published_relative_path(ctx: StageContext, folder: Path, base_dir: Path) -> str:
    """``base_dir`` relative to where ``folder`` will be published. The stage writes into a
    scratch folder (a sibling of the final one, or a temporary folder on remote stores), so
    the path is taken between the two published places: ``<root>/<stage>/<key>/...`` for
    the model, ``<root>/<upstream>/<key>/...`` for the base LM of an input artifact. A base
    outside the inputs (a folder handed in directly) is taken as it is now."""
    for art in ctx.inputs.values():
        if not hasattr(art, "stage"):  # a plain folder (tests): no published place
            continue
        root = Path(art.path)
        if root in base_dir.parents or root == base_dir:
            depth = len(Path(published(ctx, folder)).parts)
            inside = base_dir.relative_to(root).as_posix()
            return "/".join([".."] * depth + [art.stage, art.key] + ([inside] if inside != "." else []))
    return Path(os.path.relpath(base_dir.resolve(), folder.resolve())).as_posix()


def base_hub_id(model_lm: CausalLM | None, base_dir: Path) -> str:
    """The hub name of the base LM in ``base_dir`` (a prepare_lm role folder), when it came
    from the hub: ``model.lm.name_or_path`` (``chat_name_or_path`` for the chat folder)
    with ``source: pretrained`` and not a local folder; else ""."""
    if model_lm is None or model_lm.source != "pretrained":
        return ""
    name = (model_lm.chat_name_or_path or model_lm.name_or_path) if base_dir.name == "chat" else model_lm.name_or_path
    return "" if not name or Path(name).expanduser().exists() else name


def _settings(obj: TrainJob | Mapping[str, Any]) -> dict[str, str]:
    """A job section (dataclass) or a mapping as flat ``{"a.b": "value"}`` lines."""
    from stages.framework.tracking import flatten  # mlflow: imported where a card is written

    return flatten(dict(obj) if isinstance(obj, Mapping) else dataclasses.asdict(obj))


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def model_card(ctx: StageContext, folder: Path, kind: ModelKind, job: TrainJob, task: TrainingTask,
               base: BaseModelReferenceLike | None, details: Mapping[str, Any] | None = None) -> str:
    """The README.md of ``folder`` (see the module docstring)."""
    rel = folder.relative_to(ctx.output_dir).as_posix()
    state_file = folder.parent / STATE_FILE if (folder.parent / STATE_FILE).is_file() else ctx.output_dir / STATE_FILE
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}
    objective = getattr(task, "objective", "") or getattr(task, "system", "")
    lines = [
        "---", f"library_name: {'peft' if kind.adapters else 'transformers'}",
        "tags: [nugget-pipeline, " + kind.name.lower().replace(" ", "-") + "]", "---", "",
        f"# {kind.name} ({ctx.stage} / {rel})", "", kind.what, "",
        "## How it was trained", "",
        f"- stage `{ctx.stage}`, cache key `{ctx.key}`, task `{type(task).__name__}`"
        + (f", objective / system `{objective}`" if objective else ""),
    ]
    lines += [f"- `{k}`: {v}" for k, v in sorted(_settings(details or {}).items())]  # this model's own settings
    lines += [f"- `{k}`: {v}" for k, v in sorted(_settings(job).items())]
    for name in CONFIG_FILES:  # the method's own settings (the AR model's calibrated Lambda: threshold)
        if (folder / name).is_file():
            settings = json.loads((folder / name).read_text())
            lines += ["", f"## {name}", ""] + [f"- `{k}`: {v}" for k, v in sorted(settings.items())]
    lines += ["", "## Data", ""]
    # an input is an Artifact in the pipeline (a plain folder where a test hands one in)
    lines += [f"- upstream `{name}` (key `{getattr(art, 'key', art)}`)" for name, art in sorted(ctx.inputs.items())]
    if base is not None:
        lines += [f"- base LM: {base.description or '-'}; hub name `{base.hub_id or '-'}`, "
                  f"folder `{base.relative_path}` relative to this one"]
    lines += ["", "## Metrics (end of training)", ""]
    if state:
        exported = state.get("exported_step", state.get("step"))  # export_model=best_dev: an earlier step's
        lines += [f"- steps: {state.get('step')}"
                  + (f" (the weights of step {exported}, the best dev evaluation)" if exported != state.get("step")
                     else ""),
                  f"- final train loss: {state['losses'][-1]:.4f}"
                  + (f" (n = {state['train_loss_n']} sequences)" if state.get("train_loss_n") else ""),
                  f"- best dev loss: {state.get('best_dev_loss')}"
                  + (f" (n = {state['dev_loss_n']} target tokens)" if state.get("dev_loss_n") else ""),
                  f"- stopped early: {bool(state.get('stopped_early'))}"]
        if state.get("initial_dev_loss") is not None and state.get("exported_dev_loss") is not None:
            before, after = state["initial_dev_loss"], state["exported_dev_loss"]
            lines += [f"- dev loss before training (step 0) -> of these weights: {before:.4f} -> {after:.4f}"
                      + (" (above its untrained start: training made it worse)" if dev_loss_rose(before, after)
                         else ""),
                      f"- tokens seen in training: {state.get('tokens_seen', 0)} (inputs + targets, every worker)"]
    else:
        lines.append("- no trainer state beside this folder")
    lines += ["", "## How to load", "", "```python",
              kind.load.format(path=f"<artifact root>/{published(ctx, folder)}", root="<artifact root>"), "```", "",
              "The folder is self-describing: configs, weights (or adapters), tokenizer"
              + (", base_model.json (where the base LM is: a path relative to this folder, or a hub name)"
                 if kind.adapters else "") + ". See the repository's docs/architecture.md.", ""]
    return "\n".join(lines)


def document_models(ctx: StageContext, job: TrainJob, tasks: Mapping[Path, TrainingTask], model_lm: CausalLM | None = None,
                    details: Mapping[Path, Mapping[str, Any]] | None = None) -> list[Path]:
    """Model card, base reference (adapter checkpoints) and MLflow artifacts of every
    model folder in ``tasks`` (folder in the stage output -> the task that trained it;
    ``model_lm``: the ``model.lm`` section, for hub names of Nugget2D / LoRA bases;
    ``details``: per folder, settings of that model beyond ``job``, e.g. a sweep trial's)."""
    from nugget_core.checkpoint import BaseModelReference, rewrite_adapter_base

    documented = []
    for folder, task in tasks.items():
        kind = kind_of(folder)
        if kind is None:
            raise FileNotFoundError(f"{folder}: no model folder of a known kind ({', '.join(k.marker for k in KINDS)})")
        base = None
        if kind.adapters:
            if not isinstance(task, OnBaseLM):
                raise TypeError(f"{folder}: a {kind.name} checkpoint's task {type(task).__name__} names no base LM "
                                "(base_dir)")
            base_dir = Path(task.base_dir)
            base = BaseModelReference(relative_path=published_relative_path(ctx, folder, base_dir),
                                      hub_id=base_hub_id(model_lm, base_dir),
                                      description=f"prepare_lm's {base_dir.name}/ folder (key {base_dir.parent.name})")
            base.save(folder)
            rewrite_adapter_base([folder / a for a in kind.adapters], base)
        (folder / "README.md").write_text(model_card(ctx, folder, kind, job, task, base, (details or {}).get(folder)))
        rel = folder.relative_to(ctx.output_dir).as_posix()
        size = _size_mb(folder)
        if size <= MLFLOW_MODEL_MAX_MB:
            ctx.log_artifacts(folder, f"models/{rel}")
        else:
            ctx.set_tags({f"model.{rel}": f"{published(ctx, folder)} ({size:.0f} MB, above {MLFLOW_MODEL_MAX_MB} MB: "
                                          "not copied)"})
            ctx.log_artifact(folder / "README.md")
        documented.append(folder)
    return documented
