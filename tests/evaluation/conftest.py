"""The evaluation stages run once on fixture upstream artifacts, shared by the evaluation
and report tests (session scope: one similarity and one reconstruction run)."""

from __future__ import annotations

import pytest

from stages.nugget.eval_reconstruction import EvalReconstruction
from stages.nugget.eval_similarity import EvalSimilarity
from tests.evaluation.fixtures import SMALL, context, make_eval_inputs


@pytest.fixture(scope="session")
def evaluated(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("eval")
    inputs = make_eval_inputs(root)
    sim_ctx = context(EvalSimilarity, inputs, root / "out_sim", SMALL)
    EvalSimilarity().run(sim_ctx)
    rec_ctx = context(EvalReconstruction, inputs, root / "out_rec", SMALL)
    EvalReconstruction().run(rec_ctx)
    return root, inputs, sim_ctx, rec_ctx

