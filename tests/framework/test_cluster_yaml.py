"""ray_cluster.yaml passes Ray's own cluster-config schema validation."""

from pathlib import Path

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
