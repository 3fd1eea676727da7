"""Skip-or-fail for missing prerequisites, shared by the LAN tests.

A module of its own, not conftest.py: when the conformance, Noise and LAN folders run in one
pytest session, `import conftest` can find another folder's conftest.
"""

import os

import pytest

from lanharness import missing_prerequisites


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
