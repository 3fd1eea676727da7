"""pytest fixtures for the local API contract tests (see README.md here).

A master and a slave paired with it run on a simulated 2-host LAN (Tests/lan's harness); the
tests talk to their local API sockets. When the machine cannot build a LAN (not root, no
avahi-daemon...) or schemathesis is missing, tests are skipped with the reason, except under
CI mode where they fail.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
for folder in (os.path.join(TESTS, "lan"), HERE):
    if folder not in sys.path:
        sys.path.insert(0, folder)

from lan_support import require_lan  # noqa: E402
from lanharness import Lan  # noqa: E402
from ordersync_lab import OrderSyncNode  # noqa: E402


class Store:
    """A running master and a live slave paired with it."""

    def __init__(self, master: OrderSyncNode, slave: OrderSyncNode):
        self.master = master
        self.slave = slave

    def socket(self, role: str) -> str:
        node = self.master if role == "master" else self.slave
        return os.path.join(node.data_dir, "ordersync.sock")


@pytest.fixture(scope="module")
def store():
    """A master on h1 and a slave on h2, paired and live; torn down after the module."""
    require_lan()
    lan = Lan(2)
    try:
        lan.up()
        master = OrderSyncNode.master(lan.hosts[0], store="shop1", name="front")
        master.wait_api()
        slave = OrderSyncNode.slave(lan.hosts[1], store="shop1")
        slave.wait_live()
        yield Store(master, slave)
    finally:
        lan.down()
