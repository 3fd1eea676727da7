"""Runs the Swift `DiscoveryTests` (XCTest) for real: inside host h1 of a 2-host LAN, against
h1's own avahi-daemon, with h2 publishing and browsing through avahi-publish/avahi-browse.

This builds nothing: build the tests first (`swift build --build-tests`). It runs the test
bundle itself (`<build folder>/debug/*.xctest`, the tests named on its command line) rather than
`swift test`: SwiftPM takes locks shared by every SwiftPM process of the user (its configuration,
its manifest cache), asks git about every dependency and starts the bundle three times (to list
its tests, for XCTest, for swift-testing), and a CI run once sat 900 s after "Planning build"
without starting a test. Environment:

- ORDERSYNC_SWIFT_PACKAGE_DIR: the Swift package to test (default: the repository root);
- ORDERSYNC_SWIFT_SCRATCH: its build folder (default: the package's `.build`);
- ORDERSYNC_SWIFT_SANITIZE: the sanitizer that build folder was built with, for the report
  (`thread` for the ThreadSanitizer build of `Scripts/sanitizers.sh thread`:
  `ORDERSYNC_SWIFT_SCRATCH=.build-tsan ORDERSYNC_SWIFT_SANITIZE=thread`).

A run that has not ended after 300 s (about 35 s is usual, with ThreadSanitizer too) fails with
what it printed and, for it and every process it started, the kernel's wait channel and stack.

Any sanitizer report ("WARNING: ThreadSanitizer", "ERROR: AddressSanitizer") or skipped test in
the output fails the test. AvahiDiscoveryLifecycleTests are left out: they need a process with no
D-Bus system bus and run in the plain `swift test` run.
"""

import glob
import json
import os
import re
import subprocess
import time

from lan_support import require
from process_tree import descendants  # Tests/support, on the path through Tests/conftest.py

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAN_TESTS = "AvahiDiscoveryLanTests"


def discovery_bundle_command() -> list:
    """The test bundle and the tests to run: every test whose name has `DiscoveryTests` (what
    `swift test --filter DiscoveryTests` selects) but AvahiDiscoveryLifecycleTests."""
    package = os.environ.get("ORDERSYNC_SWIFT_PACKAGE_DIR") or REPO_ROOT
    build_dir = os.environ.get("ORDERSYNC_SWIFT_SCRATCH") or os.path.join(package, ".build")
    bundles = glob.glob(os.path.join(build_dir, "debug", "*.xctest"))
    require(bool(bundles), f"no test bundle under {build_dir}/debug: run `swift build --build-tests` first")
    listed = subprocess.run([bundles[0], "--list-tests"], capture_output=True, text=True, timeout=120, check=True)
    names = [line.strip() for line in listed.stdout.splitlines()
             if "DiscoveryTests" in line and "/" in line and ".AvahiDiscoveryLifecycleTests/" not in line]
    assert any(f".{LAN_TESTS}/" in name for name in names), f"no {LAN_TESTS} in {bundles[0]} --list-tests:\n{listed.stdout[-2000:]}"
    return [bundles[0], ",".join(names)]


def process_tree_report(root: int) -> str:
    """For ROOT and every process below it: its command line, state, and each thread's kernel wait
    channel and stack (what a process that hangs without using CPU waits on)."""
    lines = []
    for pid in [root, *descendants(root)]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{pid}/status") as f:
                state = next((line.split(":", 1)[1].strip() for line in f if line.startswith("State:")), "?")
        except OSError:
            continue
        lines.append(f"process {pid} ({state}): {command[:300]}")
        for task in sorted(os.listdir(f"/proc/{pid}/task"), key=int)[:64]:
            def read(name):
                try:
                    with open(f"/proc/{pid}/task/{task}/{name}") as f:
                        return f.read().strip()
                except OSError as error:
                    return f"({error.strerror})"
            stack = " <- ".join(line.split()[-1] for line in read("stack").splitlines()[:8])
            lines.append(f"  thread {task} {read('comm')}: wchan {read('wchan')}; stack {stack}")
    return "\n".join(lines)


def test_discovery_xctests_on_a_simulated_lan(lan2, tmp_path):
    command = discovery_bundle_command()
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
    timed_out, waits = False, ""
    try:
        output, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        # What it printed until then says which test hung: kept and shown, not lost with the
        # exception; where each of its processes waits says on what.
        timed_out = True
        waits = process_tree_report(process.pid)
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
    assert not timed_out, (f"the tests still running after 300 s (all of their output in {log}); where their processes wait:\n"
                           f"{waits}\nthe last of the output:\n{output[-4000:]}")
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
    assert process.returncode == 0, f"the test bundle failed ({process.returncode}):\n{report}"
    assert not skipped, f"skipped on the simulated LAN: {skipped}\n{report}"
    assert outcomes, f"{LAN_TESTS} did not run:\n{report}"
    not_passed = {name: result for name, result in outcomes.items() if result != "passed"}
    assert not not_passed, f"{LAN_TESTS} not passed: {not_passed}\n{report}"
    assert len(outcomes) >= 7, outcomes
