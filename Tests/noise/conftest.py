"""Fixtures for the Noise interop tests: the `ordersync-noise-peer` binary and the independent
`noiseprotocol` package.

The binary is `$ORDERSYNC_NOISE_PEER_BIN`, by default `<repo>/.build/debug/ordersync-noise-peer`
(`swift build --product ordersync-noise-peer`). When it or `noiseprotocol` is missing the tests
are skipped, except under CI mode, where a missing prerequisite fails them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from noise_support import noise_peer_path, require


@pytest.fixture(scope="session")
def noise_peer_bin() -> Path:
    path = noise_peer_path()
    require(path.is_file() and os.access(path, os.X_OK),
            f"no ordersync-noise-peer at {path}: run `swift build --product ordersync-noise-peer` "
            "or set ORDERSYNC_NOISE_PEER_BIN")
    return path


@pytest.fixture(scope="session")
def noise_connection():
    """`noise.connection` from PyPI's `noiseprotocol` (Scripts/setup.sh installs it)."""
    try:
        from noise import connection
    except ImportError:
        require(False, "the Python package noiseprotocol is not installed (Scripts/setup.sh installs it)")
    return connection
