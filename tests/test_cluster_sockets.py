"""The start-up check of a local Ray cluster: which listening sockets of a process tree are
not on loopback (Ray itself is exercised in test_bank_ray.py)."""

import os
import socket

import pytest

from adapath.executors import cluster

pytest.importorskip("psutil")


def test_a_loopback_listener_of_this_process_is_listed_and_not_exposed():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        listed = cluster.listening_sockets(os.getpid())
        assert any(ip == "127.0.0.1" and p == port for _, ip, p in listed), listed
        assert not any(f":{port}" in line for line in cluster.exposed_sockets(os.getpid()))


@pytest.mark.parametrize("ip, loopback", [("127.0.0.1", True), ("127.3.4.5", True), ("::1", True),
                                          ("::ffff:127.0.0.1", True), ("0.0.0.0", False), ("::", False),
                                          ("192.0.2.2", False), ("::ffff:192.0.2.2", False)])
def test_exposed_sockets_name_every_address_beyond_loopback(monkeypatch, ip, loopback):
    monkeypatch.setattr(cluster, "listening_sockets", lambda pid=None: [("raylet", ip, 4242)])
    assert cluster.exposed_sockets() == ([] if loopback else [f"raylet {ip}:4242"])
