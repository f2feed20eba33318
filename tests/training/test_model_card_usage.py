"""Every model kind's card: Hugging Face metadata and sections, and a usage example that
runs on the folder it documents."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests.training.model_folders import FOLDERS, documented_models


@pytest.fixture(scope="module")
def documented(tmp_path_factory):
    root = tmp_path_factory.mktemp("cards")
    return root, documented_models(root)


def python_block(card: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", card, re.S)
    assert len(blocks) == 1, f"expected one python block, found {len(blocks)}"
    return blocks[0]


@pytest.mark.parametrize("kind", list(FOLDERS))
def test_usage_example_runs_on_its_folder(documented, kind):
    """The card's example, with the artifact root filled in, loads the folder and prints
    what the kind is for (the old cards had a load line only, naming no method)."""
    root, ctx = documented
    card = (ctx.output_dir / FOLDERS[kind] / "README.md").read_text()
    code = python_block(card).replace("<artifact root>", str(root))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"<{kind} card>", "exec"), {"__name__": "card_example"})
    assert printed.getvalue().strip(), f"the {kind} example printed nothing"


def test_card_has_hugging_face_metadata_and_sections(documented):
    root, ctx = documented
    card = (ctx.output_dir / "nugget2d" / "README.md").read_text()
    header = card.split("---\n")[1]
    assert "library_name: peft\n" in header and "license: apache-2.0\n" in header
    assert "- nugget2d\n" in header and "- text-compression\n" in header and "- ae\n" in header
    assert "pipeline_tag: text-generation\n" in header and 'base_model: "HuggingFaceTB/SmolLM2-135M"' in header
    assert "- small scale (`model.lm.source: smollm2_offline`)" in card
    nugget = (ctx.output_dir / "nugget" / "README.md").read_text()  # a tiny BART: narrower than the papers'
    assert "- small scale: a bart model with d_model 32 and 2 encoder layers" in nugget
    for section in ("## Model description", "## Usage", "## Results (this run)", "## Training data",
                    "## Training budget", "## Limitations", "## How it was produced"):
        assert f"\n{section}\n" in card
    assert "- max_steps 3, batch_size 2, lr 0.001; device `cpu`" in card
    assert "- no trainer state beside this folder: no results recorded" in card
    assert "cache key `k`" in card and "commit `" in card
    # the MLflow Model: named after the folder, the folder copied, its loading config recorded
    logged = ctx.logger.models["nugget2d"]
    assert logged["artifacts"]["model"] == str(ctx.output_dir / "nugget2d")
    assert logged["model_config"] == {"artifact_root": str(root)}
    assert "the MLflow Model `nugget2d` (pyfunc flavour)" in card


def test_mlflow_model_names_take_none_of_the_characters_mlflow_refuses():
    from stages.training.model_card import mlflow_model_name

    assert mlflow_model_name("systems/nugget_r0.05/model") == "systems-nugget_r0-05-model"
