"""Shared by the Noise interop tests: the `ordersync-noise-peer` binary, driven line by line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ci_mode import in_ci  # Tests/support, on the path through Tests/conftest.py

REPO = Path(__file__).resolve().parents[2]
IN_CI = in_ci()


def require(condition: bool, reason: str) -> None:
    """Skip the test when `condition` is false, or fail it under CI mode (`ci_mode.in_ci`)."""
    if not condition:
        if IN_CI:
            pytest.fail(f"{reason} (required under CI mode)")
        pytest.skip(reason)


def noise_peer_path() -> Path:
    """`$ORDERSYNC_NOISE_PEER_BIN`, by default `<repo>/.build/debug/ordersync-noise-peer`."""
    return Path(os.environ.get("ORDERSYNC_NOISE_PEER_BIN", REPO / ".build" / "debug" / "ordersync-noise-peer"))


class SwiftPeer:
    """One `ordersync-noise-peer` process: a command line in, an answer line out."""

    def __init__(self, binary: Path, protocol: str, role: str, *, prologue: bytes = b"",
                 static: bytes | None = None, remote_static: bytes | None = None, psks: list[bytes] = ()):
        command = [str(binary), "--protocol", protocol, "--role", role, "--prologue", prologue.hex()]
        if static is not None:
            command += ["--static", static.hex()]
        if remote_static is not None:
            command += ["--remote-static", remote_static.hex()]
        for psk in psks:
            command += ["--psk", psk.hex()]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline().split()
        assert ready and ready[0] == "ready", f"peer did not start: {ready}, {self.process.stderr.read()}"
        self.public_static = None if ready[1] == "-" else bytes.fromhex(ready[1])

    def command(self, line: str) -> str:
        """Sends one command and returns the answer line (`ok ...` or `error CODE ...`)."""
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().rstrip("\n")
        assert answer, f"peer exited: {self.process.stderr.read()}"
        return answer

    def ok(self, line: str) -> bytes:
        """Sends a command that must succeed; returns its hex result as bytes."""
        answer = self.command(line)
        assert answer.startswith("ok"), f"{line.split()[0]} failed: {answer}"
        value = answer[3:]
        return b"" if value in ("", "-") else bytes.fromhex(value)

    def error_code(self, line: str) -> str:
        """Sends a command that must fail; returns the error code."""
        answer = self.command(line)
        assert answer.startswith("error "), f"{line.split()[0]} succeeded: {answer}"
        return answer.split()[1]

    def close(self) -> None:
        self.process.stdin.close()
        assert self.process.wait(timeout=10) == 0, self.process.stderr.read()
