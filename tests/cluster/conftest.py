"""The cluster the `cluster` tests run on: S3 (moto), an MLflow server and a 3-node Ray
cluster, all on 127.0.0.1 and all stopped by process group at the end."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.services import processes_mentioning
from tests.cluster.stack import MlflowServer, RayCluster, S3Store
from tests.data.fixtures import write_bible, write_debian_reference
from tests.framework.fixtures import make_fake_sources


@dataclass
class Stack:
    workdir: Path
    sources: Path
    s3: S3Store
    mlflow: MlflowServer
    ray: RayCluster


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("cluster")
    sources = make_fake_sources(workdir / "sources")  # synthetic corpora in the real layouts
    write_debian_reference(sources)
    write_bible(sources)
    started: list = []
    try:
        s3 = S3Store.start(workdir)
        started.append(s3.service)
        mlflow = MlflowServer.start(workdir, s3)
        started.append(mlflow.service)
        ray = RayCluster.start(workdir)
        started.append(ray)
        yield Stack(workdir, sources, s3, mlflow, ray)
    finally:
        leftovers: list[int] = []
        for thing in reversed(started):
            if isinstance(thing, RayCluster):
                leftovers = thing.stop()
            else:
                thing.stop()
    stray = processes_mentioning(str(workdir))
    assert not leftovers and not stray, (
        f"processes left behind after stopping the cluster: {leftovers} (Ray), {stray} (services)")
