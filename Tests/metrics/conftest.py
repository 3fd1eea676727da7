"""pytest fixtures for the metrics and log tests (see README.md here).

They reuse the simulated-LAN harness of Tests/lan; when a prerequisite is missing (not root,
no avahi-daemon, no prometheus...), tests are skipped with the reason, except under CI mode
where they fail.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
for folder in (os.path.join(TESTS, "lan"), os.path.join(TESTS, "support"), HERE):
    if folder not in sys.path:
        sys.path.insert(0, folder)

from lan_support import require_lan  # noqa: E402
from lanharness import Lan  # noqa: E402


@pytest.fixture
def lan2():
    """A running 2-host LAN, torn down after the test."""
    require_lan()
    lan = Lan(2)
    try:
        yield lan.up()
    finally:
        lan.down()
