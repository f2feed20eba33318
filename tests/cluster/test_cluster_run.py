"""A cut of the DAG submitted with ``ray job submit`` to a 3-node Ray cluster on this
machine, with its artifacts in S3 (moto) and its runs in an MLflow tracking server.

The cut: tokenizer -> build_mt_docs -> train_nugget, sweep_nugget, train_baselines ->
eval_reconstruction (its required and registered-optional upstreams). It stops before
``report``: the report reads every registered evaluation (``optional_upstream``, all
registered), so ``run.targets=[report]`` is the whole 27-stage DAG (16 min on 2 cores).

Checked, in one test (the cluster takes ~90 s to start, so each check reuses it):
1. the first submission succeeds although the worker node running train_nugget's Ray
   Train worker is SIGKILLed (its whole process group) once a checkpoint is in S3: the
   fit resumes from that checkpoint on the surviving node;
2. stage tasks and training workers ran on more than one raylet;
3. every stage output is in the bucket with its manifest, the ``_COMPLETE`` marker was
   the last object written into its folder (the moto server's request log), and no
   scratch or checkpoint folder is left;
4. the MLflow server holds a FINISHED parent run with a FINISHED child run per stage;
5. a second submission is all cache hits and writes no stage output.

Run with ``make cluster-test`` (or ``pytest -m cluster tests/cluster``); 500-572 s measured
on 2 cores, so ``make test`` leaves it out.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from mlflow.tracking import MlflowClient

from tests.cluster.services import BIN
from tests.cluster.stack import BUCKET, s3_env

pytestmark = [pytest.mark.cluster, pytest.mark.ray, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]
PREFIX = "nugget"
CUT = {"tokenizer", "build_mt_docs", "train_nugget", "sweep_nugget", "train_baselines", "eval_reconstruction"}
TRAIN_STEPS, CHECKPOINT_EVERY = 120, 20
# small corpora and short fits: the cut takes ~2.5 min on one 2-core node (measured)
SMALL = [
    "model.seq2seq.tokenizer_vocab_size=300", "data.mt.dev_fraction=0.1", "data.mt.test_fraction=0.1",
    "data.mt.ae_sources=[gensim_lee,sword_bible]", "eval.baselines.systems=[re_cross]",
    f"train.nugget.max_steps={TRAIN_STEPS}", f"train.nugget.checkpoint_every={CHECKPOINT_EVERY}",
    "train.nugget.eval_every=60", "train.sweep.ratios=[0.1]", "train.sweep.objectives=[ae]",
    "train.sweep.max_steps=5", "train.sweep.max_concurrent_trials=1", "train.baselines.max_steps=5",
    "train.baselines.eval_every=5", "train.baselines.checkpoint_every=5",
]
# moto's request log: `"PUT /bucket/key HTTP/1.1" 200` (one-shot upload) or
# `"POST /bucket/key?uploadId=... HTTP/1.1" 200` (a multipart upload completes)
WRITE = re.compile(r'"(PUT|POST) (/[^ ]+) HTTP/[0-9.]+" 200')


def snapshot_of_the_repo(dest: Path) -> Path:
    """The files `ray job submit --working-dir .` would upload (tracked, plus untracked
    ones git does not ignore), copied once: both submissions then run the same code, even
    while the working tree changes (a changed stage module changes its cache key)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = REPO / name
        if src.is_file():  # a file deleted but still tracked is skipped
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    for name in (".gitignore", ".rayignore"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, dest / name)
    return dest


def submit_command(stack, code: Path) -> list[str]:
    """`ray job submit` of the cut; the job's runtime env carries the S3 endpoint and
    fake credentials to the driver, every stage task and every Ray Train worker."""
    return [
        str(BIN / "ray"), "job", "submit", "--address", stack.ray.dashboard, "--working-dir", str(code),
        "--runtime-env-json", json.dumps({"env_vars": s3_env(stack.s3.endpoint)}),
        "--", "python", "pipelines/full.py", f"run.artifact_root=s3://{BUCKET}/{PREFIX}",
        f"run.tracking_uri={stack.mlflow.uri}", f"run.sources_dir={stack.sources}",
        "run.targets=[eval_reconstruction]", *SMALL,
    ]


def start_submission(stack, code: Path, log: Path) -> subprocess.Popen:
    from tests.cluster.stack import base_env

    return subprocess.Popen(submit_command(stack, code), env=base_env(), stdout=open(log, "w"),  # noqa: SIM115
                            stderr=subprocess.STDOUT, cwd=code)


def run_submission(stack, code: Path, log: Path, timeout: float) -> tuple[int, str]:
    """Submit and wait; a fresh head may answer "No available agent" for a few seconds."""
    for _ in range(10):
        proc = start_submission(stack, code, log)
        rc = proc.wait(timeout=timeout)
        text = log.read_text(errors="replace")
        if "No available agent" not in text:
            return rc, text
        time.sleep(3)
    return rc, text


def alive_train_workers(stack) -> list:
    from ray.util.state import list_actors

    return list_actors(address=stack.ray.dashboard, filters=[("state", "=", "ALIVE")], limit=1000,
                       raise_on_missing_output=False)


def checkpoints_of(stack, stage: str) -> list[str]:
    return [k for k in stack.s3.objects(f"{PREFIX}/{stage}/.work-") if "/checkpoint_" in k]


def kill_training_node(stack, proc: subprocess.Popen, log: Path, timeout: float) -> dict:
    """Wait until train_nugget has a checkpoint in S3 and is the only Ray Train job
    alive, then SIGKILL the process group of the worker node hosting its worker."""
    deadline = time.time() + timeout
    by_node = {}
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail("the job ended before train_nugget checkpointed:\n" + log.read_text()[-4000:])
        workers = [a for a in alive_train_workers(stack) if a.class_name == "RayTrainWorker"]
        if checkpoints_of(stack, "train_nugget") and len(workers) == 1:
            by_node = {n["node_id"]: n for n in stack.ray.alive_nodes()}
            target = workers[0].node_id
            node = next(w for w in stack.ray.workers if by_node[target]["resources_total"].get(w.resource))
            node.service.kill()
            return {"node": node, "node_id": target, "at": time.time(),
                    "checkpoints": checkpoints_of(stack, "train_nugget")}
        time.sleep(1)
    pytest.fail(f"train_nugget wrote no checkpoint in {timeout:.0f} s:\n" + log.read_text()[-4000:])


def write_order(moto_log: Path) -> list[str]:
    """The keys of the bucket in the order their objects came to exist."""
    keys = []
    for method, target in WRITE.findall(moto_log.read_text(errors="replace")):
        parts = urlsplit(target)
        query = parts.query
        if method == "PUT" and query:  # a part of a multipart upload: not an object yet
            continue
        if method == "POST" and "uploadId=" not in query:  # the start of a multipart upload
            continue
        path = unquote(parts.path)
        if path.startswith(f"/{BUCKET}/"):
            keys.append(path[len(BUCKET) + 2:])
    return keys


def pipeline_runs(client: MlflowClient) -> list[tuple]:
    """(parent, [children]) of every pipeline invocation, oldest first."""
    exp = client.get_experiment_by_name("nugget-pipeline")
    parents = client.search_runs([exp.experiment_id], filter_string="tags.entry != ''",
                                 order_by=["attributes.start_time ASC"])
    return [(p, client.search_runs([exp.experiment_id],
                                   filter_string=f"tags.mlflow.parentRunId = '{p.info.run_id}'"))
            for p in parents]


def report(record_property, **values: float) -> None:
    """Measured numbers: in the junit XML (record_property) and on stdout (``-s``)."""
    for name, value in values.items():
        record_property(name, value)
        print(f"cluster test: {name} = {value if isinstance(value, int) else round(value, 1)}", flush=True)


def test_cut_of_the_dag_on_a_cluster_survives_a_node_and_caches(stack, tmp_path, record_property, monkeypatch):
    from ray.util.state import list_actors, list_tasks

    # 1. first submission, with the training node killed mid-fit
    code = snapshot_of_the_repo(tmp_path / "code")
    started = time.time()
    log1 = tmp_path / "submit1.log"
    proc = start_submission(stack, code, log1)
    kill = kill_training_node(stack, proc, log1, timeout=900)
    rc = proc.wait(timeout=1200)
    first_s = time.time() - started
    report(record_property, first_submission_s=first_s, killed_after_checkpoints=len(kill["checkpoints"]))
    text = log1.read_text(errors="replace")
    assert rc == 0 and "succeeded" in text, text[-6000:]
    survivor = next(w for w in stack.ray.workers if w is not kill["node"])
    survivor_id = next(n["node_id"] for n in stack.ray.alive_nodes()
                       if n["resources_total"].get(survivor.resource))

    # 2. work ran on several raylets; train_nugget's fit resumed on the survivor
    tasks = list_tasks(address=stack.ray.dashboard, limit=10000, raise_on_missing_output=False, detail=True)
    stage_nodes = {t.name: t.node_id for t in tasks if (t.name or "").startswith("stage:") and t.node_id}
    actors = list_actors(address=stack.ray.dashboard, limit=10000, raise_on_missing_output=False)
    train_nodes = {a.node_id for a in actors if a.class_name == "RayTrainWorker"}
    assert len(set(stage_nodes.values()) | train_nodes) >= 2, (stage_nodes, train_nodes)
    assert kill["node_id"] in train_nodes and survivor_id in train_nodes, (kill, train_nodes)
    # where the stage's own task ran: on the lost node, Ray re-ran it (task retries) and the
    # new attempt resumed the fit; elsewhere, Ray Train alone restarted its worker group
    attempts = [t for t in tasks if t.name == "stage:train_nugget"]
    report(record_property, train_nugget_task_attempts=len(attempts),
           train_nugget_task_on_lost_node=int(any(t.node_id == kill["node_id"] for t in attempts)))

    objects = stack.s3.objects(f"{PREFIX}/")
    state_key = next(k for k in objects if k.startswith(f"{PREFIX}/train_nugget/")
                     and k.endswith("/trainer_state.json"))
    body = stack.s3.client().get_object(Bucket=BUCKET, Key=state_key)["Body"].read()
    state = json.loads(body)
    report(record_property, resumed_from_step=state["resumed_from_step"])
    assert state["step"] == TRAIN_STEPS
    assert state["resumed_from_step"] >= CHECKPOINT_EVERY, state  # restored, not restarted from 0
    assert state["resumed_from_step"] % CHECKPOINT_EVERY == 0

    # 3. outputs in the bucket, marker last, nothing left over
    completed = {k.rsplit("/", 1)[0] for k in objects if k.endswith("/_COMPLETE")}
    assert {d.split("/")[1] for d in completed} == CUT, sorted(completed)
    assert len(completed) == len(CUT)
    order = write_order(stack.s3.service.log_path)
    for folder in completed:
        assert f"{folder}/_nugget_manifest.json" in objects, folder
        writes = [i for i, k in enumerate(order) if k.startswith(folder + "/")]
        marker = max(i for i in writes if order[i] == f"{folder}/_COMPLETE")
        assert marker == max(writes), (folder, [order[i] for i in writes][-5:])
    leftovers = [k for k in objects if "/.work-" in k or "/.tmp-" in k or "/.old-" in k]
    assert not leftovers, leftovers[:10]

    # 4. the tracking server: a finished parent run, a finished child run per stage
    for name, value in s3_env(stack.s3.endpoint).items():  # run artifacts may live in S3,
        monkeypatch.setenv(name, value)  # read by this client directly (the experiment's location)
    client = MlflowClient(stack.mlflow.uri)
    (parent, children), = pipeline_runs(client)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["ray_submission_id"].startswith("raysubmit_")
    assert {c.data.tags["stage"] for c in children} == CUT
    assert all(c.info.status == "FINISHED" for c in children), [(c.info.run_name, c.info.status) for c in children]
    assert {c.data.tags["cache_hit"] for c in children} == {"false"}
    assert "config.yaml" in {a.path for a in client.list_artifacts(parent.info.run_id)}

    # 5. the second submission: every stage a cache hit, no stage output written
    started = time.time()
    rc, text = run_submission(stack, code, tmp_path / "submit2.log", timeout=600)
    second_s = time.time() - started
    report(record_property, second_submission_s=second_s)
    assert rc == 0 and "succeeded" in text, text[-6000:]
    runs = pipeline_runs(client)
    assert len(runs) == 2
    parent2, children2 = runs[1]
    assert parent2.info.status == "FINISHED"
    assert {c.data.tags["stage"]: c.data.tags["cache_hit"] for c in children2} == dict.fromkeys(CUT, "true")
    after = stack.s3.objects(f"{PREFIX}/")
    stage_keys = {k: v for k, v in objects.items() if k.split("/")[1] in CUT}
    assert {k: v for k, v in after.items() if k.split("/")[1] in CUT} == stage_keys

