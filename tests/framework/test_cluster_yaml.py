"""ray_cluster.yaml passes Ray's own cluster-config schema validation; kuberay_rayjob.yaml
passes KubeRay's RayJob schema (vendored, trimmed: kuberay_rayjob_schema.yaml here)."""

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def test_cluster_yaml_is_valid_for_the_ray_launcher():
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((REPO / "ray_cluster.yaml").read_text())
    config = prepare_config(raw)
    validate_config(config)  # raises on schema errors
    types = config["available_node_types"]
    assert config["head_node_type"] == "head" and types["head"]["resources"] == {"CPU": 0}
    assert "p4de" in types["gpu_worker"]["node_config"]["InstanceType"]
    assert any("pip install" in c and "-e ." in c for c in config["setup_commands"])
    assert any("mlflow server" in c for c in config["head_setup_commands"])
    # the dashboard listens on 0.0.0.0 there: every node starts with token auth
    for commands in (config["head_start_ray_commands"], config["worker_start_ray_commands"]):
        assert all("RAY_AUTH_MODE=token" in c for c in commands if "ray start" in c)


def _rayjob_validator():
    jsonschema = pytest.importorskip("jsonschema")  # a dependency of ray[default] and mlflow
    schema = yaml.safe_load((Path(__file__).parent / "kuberay_rayjob_schema.yaml").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_kuberay_rayjob_is_valid_for_the_rayjob_crd():
    job = yaml.safe_load((REPO / "kuberay_rayjob.yaml").read_text())
    errors = sorted(_rayjob_validator().iter_errors(job), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)
    spec = job["spec"]
    assert spec["entrypoint"].split()[:3] == ["python", "pipelines/full.py", "profile=paper"]
    assert "run.artifact_root=s3://" in spec["entrypoint"] and "run.tracking_uri=http://" in spec["entrypoint"]
    cluster = spec["rayClusterSpec"]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"  # as ray_cluster.yaml's head
    (gpu,) = cluster["workerGroupSpecs"]
    (container,) = gpu["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert gpu["maxReplicas"] == yaml.safe_load((REPO / "ray_cluster.yaml").read_text())[
        "available_node_types"]["gpu_worker"]["max_workers"]
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    assert set(runtime_env) <= {"working_dir", "env_vars", "py_modules", "pip", "excludes"}
    # the same token on every node, from a Secret
    for group in (cluster["headGroupSpec"], gpu):
        env = {e["name"]: e for e in group["template"]["spec"]["containers"][0]["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token" and "secretKeyRef" in env["RAY_AUTH_TOKEN"]["valueFrom"]


@pytest.mark.parametrize("path, value, complaint", [
    (("spec", "entrypointt"), "python x.py", "Additional properties"),       # a misspelt key
    (("spec", "rayClusterSpec", "workerGroupSpecs", 0, "minReplicas"), "0", "is not of type 'integer'"),
    (("spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "containers", 0, "resources",
      "limits", "cpu"), "eight", "is not valid under any of the given schemas"),
])
def test_the_rayjob_schema_refuses_what_kubernetes_would(path, value, complaint):
    job = yaml.safe_load((REPO / "kuberay_rayjob.yaml").read_text())
    node = job
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    messages = [e.message for e in _rayjob_validator().iter_errors(job)]
    assert any(complaint in m for m in messages), messages
