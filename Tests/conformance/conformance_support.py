"""Shared by the conformance tests: where things are, and skip-or-fail for missing tools."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() == "true"


def require(condition: bool, reason: str) -> None:
    """Skip the test when `condition` is false, or fail it under CI=true."""
    if not condition:
        if IN_CI:
            pytest.fail(f"{reason} (required under CI=true)")
        pytest.skip(reason)


def wsecho_path() -> Path:
    """`$ORDERSYNC_WSECHO_BIN`, by default `<repo>/.build/debug/ordersync-wsecho`."""
    return Path(os.environ.get("ORDERSYNC_WSECHO_BIN", REPO / ".build" / "debug" / "ordersync-wsecho"))


def ordersync_path() -> Path:
    """`$ORDERSYNC_BIN`, by default `<repo>/.build/debug/ordersync`."""
    return Path(os.environ.get("ORDERSYNC_BIN", REPO / ".build" / "debug" / "ordersync"))
