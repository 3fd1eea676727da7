"""pytest fixtures for tests on a simulated store LAN (see lanharness.py).

When the machine cannot build a LAN (not root, no avahi-daemon, no `ip`...), tests are skipped
with the reason, except under CI mode where a missing prerequisite is a failure.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))

from lan_support import require, require_lan  # noqa: E402
from lanharness import Lan, LanError  # noqa: E402
from ordersync_lab import ordersync_binary  # noqa: E402


@pytest.fixture
def ordersync_built():
    """Skips (fails under CI mode) when the ordersync binary has not been built. A module whose
    every test runs the binary says `pytestmark = pytest.mark.usefixtures("ordersync_built")`."""
    try:
        ordersync_binary()
    except LanError as error:
        require(False, str(error))


@pytest.fixture
def make_lan():
    """Factory: ``make_lan(n)`` builds an n-host LAN that is torn down after the test."""
    require_lan()
    lans = []

    def make(hosts: int) -> Lan:
        lan = Lan(hosts)
        lans.append(lan)
        return lan.up()

    try:
        yield make
    finally:
        for lan in lans:
            lan.down()


@pytest.fixture
def lan2(make_lan):
    """A running 2-host LAN."""
    return make_lan(2)


@pytest.fixture
def lan3(make_lan):
    """A running 3-host LAN."""
    return make_lan(3)
