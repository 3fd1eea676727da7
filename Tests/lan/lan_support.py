"""Skip-or-fail for missing prerequisites, shared by the LAN tests.

A module of its own, not conftest.py: when the conformance, Noise and LAN folders run in one
pytest session, `import conftest` can find another folder's conftest.
"""

import pytest
from ci_mode import in_ci  # Tests/support, on the path through Tests/conftest.py

from lanharness import missing_prerequisites


def require(condition: bool, reason: str) -> None:
    """Skips the test (fails it under CI mode) with ``reason`` when ``condition`` is false."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"prerequisite missing under CI mode: {reason}", pytrace=False)
    pytest.skip(reason)


def require_lan() -> None:
    """Skips (or under CI fails) the test when a LAN cannot be built here."""
    missing = missing_prerequisites()
    require(not missing, "; ".join(missing))
