"""Runs the Swift `DiscoveryTests` (XCTest) for real: inside host h1 of a 2-host LAN, against
h1's own avahi-daemon, with h2 publishing and browsing through avahi-publish/avahi-browse.

This builds nothing: build the tests first (`swift build --build-tests`). Environment:

- ORDERSYNC_SWIFT_PACKAGE_DIR: the Swift package to test (default: the repository root);
- ORDERSYNC_SWIFT_SCRATCH: its build folder, passed as --scratch-path (default: SwiftPM's);
- ORDERSYNC_SWIFT_SANITIZE: the sanitizer that build folder was built with, passed as
  --sanitize (`thread` for the ThreadSanitizer build of `Scripts/sanitizers.sh thread`:
  `ORDERSYNC_SWIFT_SCRATCH=.build-tsan ORDERSYNC_SWIFT_SANITIZE=thread`).

Any sanitizer report ("WARNING: ThreadSanitizer", "ERROR: AddressSanitizer") or skipped test in
the output fails the test. AvahiDiscoveryLifecycleTests are left out: they need a process with no
D-Bus system bus and run in the plain `swift test` run.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import time

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
    if sanitizer := os.environ.get("ORDERSYNC_SWIFT_SANITIZE"):
        command += ["--sanitize", sanitizer]
    return command + ["--filter", "DiscoveryTests", "--skip", "AvahiDiscoveryLifecycleTests"]


def test_discovery_xctests_on_a_simulated_lan(lan2, tmp_path):
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
    started = time.monotonic()
    process = h1.popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    timed_out = False
    try:
        output, _ = process.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        # What it printed until then says which test hung: kept and shown, not lost with the exception.
        timed_out = True
        process.kill()
        try:
            output, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired as still:
            # A child of the killed process may hold the pipe open: take what was read so far.
            partial = still.output or b""
            output = partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = tmp_path / "swift-test.log"
    log.write_text(output)
    assert not timed_out, f"swift test still running after 900 s (all of its output in {log}); the last of it:\n{output[-4000:]}"
    print(f"FIGURE DiscoveryTests on a simulated LAN ({os.environ.get('ORDERSYNC_SWIFT_SANITIZE') or 'no sanitizer'}): "
          f"{time.monotonic() - started:.1f} s")
    outcomes = dict(re.findall(rf"Test Case '{LAN_TESTS}\.(\w+)' (passed|failed|skipped)", output))
    skipped = re.findall(r"Test Case '([\w.]+)' skipped", output)
    sanitizer_reports = [line for line in output.splitlines()
                         if "WARNING: ThreadSanitizer" in line or "ERROR: AddressSanitizer" in line]
    failures = "\n".join(line for line in output.splitlines() if " error: " in line or "' failed" in line)
    report = f"{failures}\n--- last output (all of it in {log}) ---\n{output[-3000:]}"
    first_report = output.find(sanitizer_reports[0]) if sanitizer_reports else 0
    assert not sanitizer_reports, f"{len(sanitizer_reports)} sanitizer reports (all in {log}), the first:\n{output[first_report:first_report + 4000]}"
    assert process.returncode == 0, f"swift test failed ({process.returncode}):\n{report}"
    assert not skipped, f"skipped on the simulated LAN: {skipped}\n{report}"
    assert outcomes, f"{LAN_TESTS} did not run:\n{report}"
    not_passed = {name: result for name, result in outcomes.items() if result != "passed"}
    assert not not_passed, f"{LAN_TESTS} not passed: {not_passed}\n{report}"
    assert len(outcomes) >= 7, outcomes
