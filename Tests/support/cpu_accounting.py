"""CPU per test and per test file, from the cgroup (v2) Scripts/test.sh runs each stage in.

The stage's cgroup holds the pytest process and everything it started: the daemons of the LAN
scenarios, avahi-daemon (which forks itself away from its parent), the Python peers, Chromium,
Prometheus. Its `cpu.stat` counts their CPU whether or not pytest waited for them, so the CPU
a test caused is the cgroup's `usage_usec` after the test minus before it (setup and teardown
included: a module's fixture is counted in the test that starts or stops it). A daemon a test
left running is counted in the tests that run while it lives.

Only when `ORDERSYNC_CPU_PER_TEST` is set (Scripts/test.sh sets it when it made the cgroups): a
process in a cgroup shared with other work (a login session's) would count that work too.
"""

from __future__ import annotations

import os


def cpu_stat_path() -> str | None:
    """The `cpu.stat` of this process's cgroup v2, or None (not asked for, or no such file)."""
    if not os.environ.get("ORDERSYNC_CPU_PER_TEST"):
        return None
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            group = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
        mount = None
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                fields = line.split()
                if fields[fields.index("-") + 1] == "cgroup2":
                    mount = fields[4]
                    break
    except OSError:
        return None
    if not group or group == "/" or mount is None:
        return None
    path = os.path.join(mount, group.lstrip("/"), "cpu.stat")
    return path if os.path.exists(path) else None


def usage_seconds(path: str) -> float:
    """The cgroup's CPU so far (user and system, every process in it), in seconds."""
    with open(path, encoding="ascii") as f:
        for line in f:
            key, value = line.split()
            if key == "usage_usec":
                return int(value) / 1_000_000
    raise ValueError(f"{path} has no usage_usec")


def summary_lines(per_test: dict[str, float], wall: dict[str, float] | None = None, top: int = 30) -> list[str]:
    """The table printed at the end of a run: CPU (and wall time) per test file, then the `top`
    tests by CPU."""
    wall = wall or {}
    per_file: dict[str, float] = {}
    wall_per_file: dict[str, float] = {}
    for nodeid, seconds in per_test.items():
        name = nodeid.split("::", 1)[0]
        per_file[name] = per_file.get(name, 0.0) + seconds
        wall_per_file[name] = wall_per_file.get(name, 0.0) + wall.get(nodeid, 0.0)
    total = sum(per_test.values())
    lines = [f"{total:.0f} CPU-s in {len(per_test)} tests ({sum(wall.values()):.0f} s of wall time); per file, CPU and wall time:"]
    lines += [f"{seconds:8.1f} s  {wall_per_file[name]:8.1f} s  {name}"
              for name, seconds in sorted(per_file.items(), key=lambda kv: -kv[1])]
    lines.append(f"the {min(top, len(per_test))} tests that used the most CPU:")
    ranked = sorted(per_test.items(), key=lambda kv: -kv[1])[:top]
    lines += [f"{seconds:8.1f} s  {nodeid}" for nodeid, seconds in ranked]
    return lines
