"""Runs the Swift `DiscoveryTests` (XCTest) for real: inside host h1 of a 2-host LAN, against
h1's own avahi-daemon, with h2 publishing and browsing through avahi-publish/avahi-browse.

This builds nothing: build the tests first (`swift build --build-tests`). Environment:

- ORDERSYNC_SWIFT_PACKAGE_DIR: the Swift package to test (default: the repository root);
- ORDERSYNC_SWIFT_SCRATCH: its build folder, passed as --scratch-path (default: SwiftPM's).
"""

import glob
import json
import os
import re
import shutil
import subprocess

from lan_support import require

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAN_TESTS = "AvahiDiscoveryLanTests"


def swift_test_command() -> list:
    package = os.environ.get("ORDERSYNC_SWIFT_PACKAGE_DIR") or REPO_ROOT
    scratch = os.environ.get("ORDERSYNC_SWIFT_SCRATCH")
    require(shutil.which("swift") is not None, "`swift` not found in PATH")
    build_dir = scratch or os.path.join(package, ".build")
    built = glob.glob(os.path.join(build_dir, "debug", "*.xctest"))
    require(bool(built), f"no test bundle under {build_dir}/debug: run `swift build --build-tests` first")
    command = ["swift", "test", "--skip-build", "--package-path", package]
    if scratch:
        command += ["--scratch-path", scratch]
    return command + ["--filter", "DiscoveryTests"]


def test_discovery_xctests_on_a_simulated_lan(lan2):
    command = swift_test_command()
    h1, h2 = lan2.hosts
    env = dict(os.environ)
    env.update({
        "ORDERSYNC_AVAHI_TESTS": "1",
        "ORDERSYNC_HOST_ADDRESS": h1.address,
        "ORDERSYNC_PEER_ADDRESS": h2.address,
        "ORDERSYNC_PEER_COMMAND": json.dumps(h2.command([])),
        "ORDERSYNC_AVAHI_START": json.dumps(["avahi-daemon", "-D", "-f", h1.avahi_conf,
                                             "--no-chroot", "--no-drop-root"]),
    })
    env.pop("DBUS_SYSTEM_BUS_ADDRESS", None)
    process = h1.popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = process.communicate(timeout=900)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    outcomes = dict(re.findall(rf"Test Case '{LAN_TESTS}\.(\w+)' (passed|failed|skipped)", output))
    failures = "\n".join(line for line in output.splitlines() if " error: " in line or "' failed" in line)
    report = f"{failures}\n--- last output ---\n{output[-3000:]}"
    assert process.returncode == 0, f"swift test failed ({process.returncode}):\n{report}"
    assert outcomes, f"{LAN_TESTS} did not run:\n{report}"
    not_passed = {name: result for name, result in outcomes.items() if result != "passed"}
    assert not not_passed, f"{LAN_TESTS} not passed: {not_passed}\n{report}"
    assert len(outcomes) >= 7, outcomes
