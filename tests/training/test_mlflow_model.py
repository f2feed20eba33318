"""The MLflow Model of a trained model folder: logged into a real (sqlite) store through
the stage's run, loaded back with ``mlflow.pyfunc.load_model`` and asked to predict."""

from __future__ import annotations

import time
import warnings

import pytest

from tests.training.model_folders import documented_models


def _tracker(root):
    from stages.framework.tracking import Tracker

    return Tracker(f"sqlite:///{root}/mlflow.db", "cards-test", str(root / "mlartifacts"))


def _logged(tracker, run_id):
    return tracker.client.search_logged_models(experiment_ids=[tracker.client.get_run(run_id).info.experiment_id])


def test_logged_model_loads_back_and_predicts(tmp_path):
    import mlflow.pyfunc

    tracker = _tracker(tmp_path)
    logger = tracker.start_run("train_x", {})
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ctx = documented_models(tmp_path, ("RE restorable embedding", "Nugget"), logger=logger)
    assert not [w for w in seen if "Add type hints" in str(w.message)]  # MLflow's advice stays out of the log
    print(f"two tiny models documented and logged in {time.perf_counter() - start:.1f} s")
    models = {m.name: m for m in _logged(tracker, logger.run_id)}
    assert sorted(models) == ["nugget", "re"] and {m.source_run_id for m in models.values()} == {logger.run_id}
    # the card is the model's README, beside MLmodel
    files = {f.path for f in tracker.client.list_logged_model_artifacts(models["re"].model_id)}
    assert {"README.md", "MLmodel"} <= files
    with mlflow.tracking._tracking_service.utils._use_tracking_uri(tracker.client.tracking_uri):
        re_model = mlflow.pyfunc.load_model(f"models:/{models['re'].model_id}")
        nugget = mlflow.pyfunc.load_model(f"models:/{models['nugget'].model_id}")
    embeddings = re_model.predict(["A first text.", "A second, longer text of more words."])
    assert len(embeddings) == 2 and len(embeddings[0]) == len(embeddings[1]) > 1
    assert embeddings[0] != embeddings[1]
    texts = nugget.predict(["A first text.", "A second text."])
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
    import torch

    assert torch.is_grad_enabled()  # loading and predicting leave the process's autograd on
    assert (ctx.output_dir / "re" / "README.md").is_file()


def test_a_folder_above_the_limit_is_referenced_not_copied_and_says_so(tmp_path, monkeypatch, caplog):
    import mlflow.pyfunc

    monkeypatch.setenv("NUGGET_MLFLOW_MODEL_MAX_MB", "0")
    tracker = _tracker(tmp_path)
    logger = tracker.start_run("train_x", {})
    ctx = documented_models(tmp_path, ("bottleneck baseline",), logger=logger)
    card = (ctx.output_dir / "bottleneck" / "README.md").read_text()
    assert "is NOT copied into it: the model holds this card and the reference `train_nugget2d_ar/k/bottleneck`" in card
    assert "above the MLflow model limit of 0 MB" in caplog.text
    (model,) = _logged(tracker, logger.run_id)
    files = {f.path for f in tracker.client.list_logged_model_artifacts(model.model_id)}
    assert "artifacts/bottleneck" not in files and not any(f.endswith(".safetensors") for f in files)
    with mlflow.tracking._tracking_service.utils._use_tracking_uri(tracker.client.tracking_uri):
        loaded = mlflow.pyfunc.load_model(f"models:/{model.model_id}",
                                          model_config={"artifact_root": str(tmp_path)})
    (vector,) = loaded.predict(["one text"])
    assert len(vector) > 1
    with pytest.raises(Exception, match="not copied into the MLflow model"):
        with mlflow.tracking._tracking_service.utils._use_tracking_uri(tracker.client.tracking_uri):
            mlflow.pyfunc.load_model(f"models:/{model.model_id}", model_config={"artifact_root": str(tmp_path / "x")})
