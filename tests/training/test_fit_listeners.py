"""A fit opens no listener outside the node's own address: on the local Ray (loopback) every
LISTEN socket of the training workers is on 127.0.0.1 / ::1, none on ``*`` (torch's
rendezvous store, Gloo's pairs; `stages.training.process_group`)."""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from stages.training.launch import _run
from stages.training.process_group import IFNAME_VARS, bind_collectives_to_node, interface_of


def _listeners() -> list[tuple[str, int]]:
    """This process's TCP LISTEN sockets as (address, port)."""
    import psutil

    return [(c.laddr.ip, c.laddr.port) for c in psutil.Process().net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN]


def _report_listeners(config: dict) -> None:
    """The fit's train function: after one collective (Gloo's pairs are connected by then),
    each worker writes its listeners to ``<out>/rank<r>.json``."""
    import ray.train
    import torch
    import torch.distributed as dist

    dist.all_reduce(torch.ones(1, device="cpu"))
    rank = ray.train.get_context().get_world_rank()
    Path(config["out"], f"rank{rank}.json").write_text(json.dumps({
        "listen": _listeners(), "ifnames": [os.environ.get(v) for v in IFNAME_VARS]}))


def _off_loopback(address: str) -> bool:
    """True for a wildcard ("::", "0.0.0.0") or any other address but 127.0.0.0/8, ::1 and
    their IPv4-mapped forms (::ffff:127.0.0.1, which Python 3.11 does not call loopback)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    return not (ip.is_loopback or getattr(ip, "ipv4_mapped", None) and ip.ipv4_mapped.is_loopback)


def test_a_fit_on_the_local_ray_listens_on_loopback_only(ray_local, tmp_path):
    out = tmp_path / "listeners"
    out.mkdir()
    job = SimpleNamespace(num_workers=2, use_gpu=False, max_failures=0)
    _run(_report_listeners, {"out": str(out)}, job, str(tmp_path / "storage"), "listeners")
    reports = {p.stem: json.loads(p.read_text()) for p in sorted(out.glob("rank*.json"))}
    assert sorted(reports) == ["rank0", "rank1"]
    assert any(r["listen"] for r in reports.values())  # the store and Gloo's pairs do listen
    exposed = {rank: [a for a in r["listen"] if _off_loopback(a[0])] for rank, r in reports.items()}
    assert exposed == {"rank0": [], "rank1": []}, f"training workers listen off loopback: {reports}"
    # Gloo / NCCL on loopback by setting, not because this host's name resolves to 127.0.0.1
    lo = interface_of("127.0.0.1")
    assert all(r["ifnames"] == [lo, f"={lo}"] for r in reports.values())


def test_interface_of_a_local_and_a_foreign_address():
    assert interface_of("127.0.0.1") is not None  # "lo" on Linux
    assert interface_of("192.0.2.254") is None  # TEST-NET-1: on no interface of a test machine


@pytest.mark.parametrize("node, expected", [
    ("127.0.0.1", True), ("192.0.2.254", False),  # an address on no interface: the libraries choose
])
def test_collectives_bind_to_the_node_interface(monkeypatch, node, expected):
    for var in IFNAME_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("stages.training.process_group._node_address", lambda: node)
    bind_collectives_to_node()
    lo = interface_of("127.0.0.1")
    assert [os.environ.get(v) for v in IFNAME_VARS] == ([lo, f"={lo}"] if expected else [None, None])


def test_an_interface_the_user_named_is_kept(monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "eth7")
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "=ib0")
    monkeypatch.setattr("stages.training.process_group._node_address", lambda: "127.0.0.1")
    bind_collectives_to_node()
    assert [os.environ[v] for v in IFNAME_VARS] == ["eth7", "=ib0"]


def test_the_node_bound_backend_takes_only_a_torch_config():
    from ray.train.backend import BackendConfig

    from stages.training.process_group import NodeBoundTorchConfig

    with pytest.raises(TypeError, match="BackendConfig: the node-bound torch backend takes a TorchConfig"):
        NodeBoundTorchConfig().backend_cls().on_start(None, BackendConfig())
