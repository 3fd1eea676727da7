"""Applies to every Python test folder (Tests/pytest.ini makes Tests/ pytest's root folder).

Under CI mode (`ci_mode.in_ci`) nothing may be skipped: a test that is skipped (`pytest.skip`,
`skipif`, `importorskip`), expected to fail (`xfail`, whether it then fails or passes) or a
module skipped at collection is reported as a failure, and the run ends with the list of them.
Outside CI mode skips stay skips.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)

from ci_mode import in_ci  # noqa: E402
from cpu_accounting import cpu_stat_path, summary_lines, usage_seconds  # noqa: E402

# Every daemon and command a test starts reads no settings file unless the test names one: the
# package's tests (Tests/package, in another track of Scripts/test.sh) install
# /etc/ordersync/ordersync.conf, the default, while the other tests run. The package's own
# tests give their units an environment of their own, as systemd would.
os.environ.setdefault("ORDERSYNC_CONFIG", "/dev/null")

#: "nodeid: reason" of every skip turned into a failure in this run.
_hidden: list[str] = []

#: The cgroup's cpu.stat when Scripts/test.sh asked for CPU per test (Tests/support/cpu_accounting.py).
_CPU_STAT = cpu_stat_path()
#: nodeid: CPU-seconds of the test's cgroup while it ran (setup, call, teardown).
_cpu: dict[str, float] = {}
#: nodeid: seconds of wall time the same test took (to balance the suites Scripts/test.sh runs side by side).
_wall: dict[str, float] = {}


def _reason(report) -> str:
    """Why pytest skipped (or expected to fail) the item of `report`."""
    if getattr(report, "wasxfail", None) is not None:
        return f"xfail: {report.wasxfail}" if report.wasxfail else "xfail"
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail(report) -> None:
    """Turns the skip (or xfail, xpass) of `report` into a failure and records it."""
    reason = _reason(report)
    _hidden.append(f"{report.nodeid}: {reason}")
    report.outcome = "failed"
    report.longrepr = f"skipped under CI mode (CI={os.environ.get('CI')!r}), which allows no skip: {reason}"
    if hasattr(report, "wasxfail"):
        del report.wasxfail


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI mode a skipped, xfailed or xpassed test phase is a failed one."""
    report = yield
    if in_ci() and (report.skipped or hasattr(report, "wasxfail")):
        _fail(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """Under CI mode a module skipped while it is collected is a collection error."""
    report = yield
    if in_ci() and report.skipped:
        _fail(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Records the CPU the test's cgroup used while the test ran, when asked (see _CPU_STAT)."""
    if _CPU_STAT is None:
        return (yield)
    before, began = usage_seconds(_CPU_STAT), time.monotonic()
    try:
        return (yield)
    finally:
        _cpu[item.nodeid] = usage_seconds(_CPU_STAT) - before
        _wall[item.nodeid] = time.monotonic() - began


def pytest_terminal_summary(terminalreporter):
    """Lists what was skipped under CI mode (each is also reported as a failure), and the CPU per
    test file and per test when it was counted."""
    if _cpu:
        terminalreporter.section("CPU of the tests and of everything they started (cgroup)", sep="=")
        for line in summary_lines(_cpu, _wall):
            terminalreporter.line(line)
    if _hidden:
        terminalreporter.section("skips under CI mode (each one fails the run)", sep="=", red=True, bold=True)
        for line in _hidden:
            terminalreporter.line(line)


def pytest_sessionfinish(session):
    """The run fails when anything was skipped under CI mode, even with -x or a custom exit."""
    if _hidden and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
