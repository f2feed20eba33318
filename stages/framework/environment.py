"""The environment a stage's output depends on: the versions of the libraries it runs.

An upgraded library can change what a stage computes (a tokenizer's normalisation, a kernel,
a default) while its code and config stay the same, so a stage's cache key includes its
*environment*: ``{name: version}`` of

- ``python`` (the interpreter; it also decides the form of the code digest,
  :mod:`stages.framework.code_identity`);
- every third-party distribution its import closure imports
  (:func:`stages.framework.provenance.third_party_imports`), except the plumbing libraries of
  ``PLUMBING_IMPORTS``, which move bytes or records but compute nothing the stage writes;
  an import nobody classified counts (unknown means it may matter);
- the libraries those imports run underneath (``UNDERNEATH``: transformers tokenises with
  ``tokenizers``, converts SentencePiece models with ``sentencepiece``, ...);
- for torch: ``torch.cuda`` (the CUDA its build targets) and ``cudnn`` (the version of the
  ``nvidia-cudnn-*`` wheel it loads; ``none`` where none is installed: a CPU build, or a
  cuDNN outside pip, which this cannot see).

Everything is read from installed metadata and torch's ``version.py``: nothing is imported,
so ``--dry-run`` stays instant. The driver computes it when it plans; the task that runs the
stage computes it again and refuses to run under other versions
(:func:`environment_problems`): a node upgraded behind the others cannot write an output
under a key that says otherwise.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import importlib.util
import platform
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from stages.framework.provenance import third_party_imports

if TYPE_CHECKING:
    from stages.framework.stage import Stage

# imports that compute nothing a stage writes: configuration (its resolved values are keyed),
# transport and storage (outputs are checksummed), process bookkeeping, downloads (the
# downloaded files are fingerprinted, `stages.framework.external`), and figures
PLUMBING_IMPORTS = frozenset({
    "omegaconf", "yaml", "fsspec", "s3fs", "psutil", "huggingface_hub", "matplotlib", "mlflow",
    "tqdm", "filelock", "zstandard",
})
# libraries an import runs underneath without the stage importing them by name
UNDERNEATH: dict[str, tuple[str, ...]] = {
    "transformers": ("tokenizers", "safetensors", "sentencepiece", "gguf"),
    "datasets": ("pyarrow",),
}
# import name -> distribution, where they differ (others are looked up in the installed metadata)
DISTRIBUTIONS = {"rouge_score": "rouge-score", "yaml": "pyyaml", "sklearn": "scikit-learn"}
ABSENT = "absent"


@cache
def _distribution_of(import_name: str) -> str:
    if import_name in DISTRIBUTIONS:
        return DISTRIBUTIONS[import_name]
    owners = _installed_owners().get(import_name)
    return owners[0] if owners else import_name


@cache
def _installed_owners() -> Mapping[str, list[str]]:
    return metadata.packages_distributions()  # one scan of every installed distribution


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``; None where it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@cache
def distribution_version(distribution: str) -> str:
    """The installed version of ``distribution``; ``"absent"`` where it is not installed."""
    return installed_version(distribution) or ABSENT


@cache
def torch_build() -> dict[str, str]:
    """``{"torch.cuda": ..., "cudnn": ...}`` of the installed torch, from its ``version.py``
    and the installed cuDNN wheel (no import of torch)."""
    spec = importlib.util.find_spec("torch")
    cuda = "none"
    if spec is not None and spec.submodule_search_locations:
        version_py = Path(next(iter(spec.submodule_search_locations))) / "version.py"
        if version_py.is_file():
            for node in ast.parse(version_py.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Constant):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(isinstance(t, ast.Name) and t.id == "cuda" for t in targets):
                        cuda = str(node.value.value) if node.value.value else "none"
    cudnn = next((v for d in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11")
                  if (v := distribution_version(d)) != ABSENT), "none")
    return {"torch.cuda": cuda, "cudnn": cudnn}


def module_environment(module_name: str) -> dict[str, str]:
    """The environment of a module's import closure (see the module docstring)."""
    found = {"python": platform.python_version()}
    names = [n for n in third_party_imports(module_name) if n not in PLUMBING_IMPORTS]
    for name in names:
        for distribution in (_distribution_of(name), *UNDERNEATH.get(name, ())):
            found[distribution] = distribution_version(distribution)
    if "torch" in names:
        found.update(torch_build())
    return dict(sorted(found.items()))


def stage_environment(stage_cls: type[Stage]) -> dict[str, str]:
    """The environment that enters ``stage_cls``'s cache key."""
    return module_environment(stage_cls.__module__)


def environment_problems(stage_cls: type[Stage], planned: dict[str, str]) -> list[str]:
    """How this process's environment for ``stage_cls`` differs from the one its key was
    planned with (``name: planned -> here``); empty when they agree."""
    here = stage_environment(stage_cls)
    return [f"{name}: {planned.get(name, ABSENT)} planned, {here.get(name, ABSENT)} here"
            for name in sorted(set(here) | set(planned)) if here.get(name) != planned.get(name)]
