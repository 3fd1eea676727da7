"""pytest fixtures for tests on a simulated store LAN (see lanharness.py).

When the machine cannot build a LAN (not root, no avahi-daemon, no `ip`...), tests are skipped
with the reason, except under CI=true where a missing prerequisite is a failure.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lanharness import Lan, missing_prerequisites  # noqa: E402


def in_ci() -> bool:
    """True when running under CI, where nothing may be skipped for lack of tools."""
    return os.environ.get("CI", "").lower() == "true"


def require(condition: bool, reason: str) -> None:
    """Skips the test (fails it under CI=true) with ``reason`` when ``condition`` is false."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"prerequisite missing under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def require_lan() -> None:
    """Skips (or under CI fails) the test when a LAN cannot be built here."""
    missing = missing_prerequisites()
    require(not missing, "; ".join(missing))


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
