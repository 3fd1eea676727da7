"""The benchmark's pipeline, end to end in seconds: `Scripts/perf.py --smoke` runs every scenario
tiny against the OrderSync master and the Python baseline, and its figures must be well formed.
This checks the measuring, not the speed (Docs/PERFORMANCE.md has the figures)."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from ci_mode import in_ci  # Tests/support, on the path through Tests/conftest.py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prerequisites():
    binary = os.environ.get("ORDERSYNC_BIN", os.path.join(REPO, ".build", "debug", "ordersync"))
    missing = [name for name in ("gcc", "taskset", "psql") if not shutil.which(name)]
    if not any(os.access(os.path.join(d, "initdb"), os.X_OK) for d in ("/usr/lib/postgresql/15/bin", "/usr/local/bin")) \
            and not shutil.which("initdb"):
        missing.append("initdb (postgresql, for the roll-up's scenario)")
    if not os.access(binary, os.X_OK):
        missing.append(binary)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        missing.append("matplotlib")
    if missing:
        why = "the benchmark needs " + ", ".join(missing)
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)
    return binary


def test_every_scenario_gives_well_formed_figures_for_both_masters(tmp_path):
    binary = prerequisites()
    out = tmp_path / "perf.json"
    plots = tmp_path / "plots"
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "Scripts", "perf.py"), "--smoke", "--bin", binary, "--out-json", str(out),
         "--plots", str(plots)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    r = json.loads(out.read_text())
    print(result.stdout)

    for row in r["throughput"]:
        for kind in ("ordersync", "python"):
            f = row[kind]
            assert f["ops_per_s"] > 0 and f["deliveries_per_cpu_s"] > 0, (kind, f)
            assert f["server_cpu_s"] > 0 and f["generator_cpu_s"] > 0, (kind, f)
    for row in r["latency"]:
        for kind in ("ordersync", "python"):
            f = row[kind]
            assert 0 < f["p50"] <= f["p99"] <= f["p999"] <= f["max"], (kind, f)
    assert r["catch_up"]["seconds"] > 0 and r["catch_up"]["path"] in ("journal", "snapshot")
    for kind in ("ordersync", "python"):
        held = r["many_terminals"][kind]
        assert held["rss_mib"] > 0 and held["hwm_mib"] >= held["rss_mib"] - 1, held
        assert r["idle"][kind]["rss_mib"] > 0
        assert r["snapshot"][kind]["storepos_s"] > 0
    assert r["snapshot"]["ordersync"]["slave_s"] > 0
    for key in ("terminals", "order_bytes", "store_orders"):
        rows = r["sweeps"][key]
        assert len(rows) >= 2 and [row["x"] for row in rows] == sorted(row["x"] for row in rows)
        for row in rows:
            assert row["ordersync"]["cpu_us_per_op"] > 0 and row["ordersync"]["p99_ms"] > 0, row
    assert r["fdatasync_ms"]["p50"] > 0
    # Paired terminals (the generator on the secure link) beside StorePOS terminals.
    p = r["paired"]
    for row in p["throughput"]:
        for kind in ("storepos", "paired"):
            assert row[kind]["ops_per_s"] > 0 and row[kind]["cpu_us_per_delivery"] > 0, (kind, row)
    for row in p["terminals"]:
        for kind in ("storepos", "paired"):
            assert 0 < row[kind]["p50"] <= row[kind]["p99"] <= row[kind]["p999"], (kind, row)
            # Each delivery also stamped when the kernel had it at the terminal's socket: before
            # the generator read it, and at the first receiver no later than at the last.
            first, last = row[kind]["first_arrival_ms"], row[kind]["arrival_ms"]
            assert row[kind]["all_stamped"], (kind, row)
            assert 0 < first["p50"] <= last["p50"] < row[kind]["p50"], (kind, row)
            assert first["p99"] <= last["p99"] < row[kind]["p99"], (kind, row)
    for row in p["memory"]:
        for kind in ("storepos", "paired"):
            assert row[kind]["rss_connected_mib"] > 0, (kind, row)
    g = r["rollup"]
    assert g["catch_up_rows_per_s"] > 0 and g["link_up_s"] > 0, g
    assert 0 < g["lag_p50_ms"] <= g["lag_p99_ms"] <= g["lag_max_ms"], g
    pngs = sorted(p.name for p in plots.iterdir())
    assert pngs == ["cost-order-bytes.png", "cost-store-orders.png", "cost-terminals.png"], pngs
    for p in plots.iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The tables printed for Docs/PERFORMANCE.md name both masters and the command.
    assert "| receivers | OrderSync ops/s | Python ops/s |" in result.stdout
    assert "(g) The roll-up into PostgreSQL on loopback" in result.stdout
    assert "(p) Paired terminals (secure link) against StorePOS terminals" in result.stdout
    assert "Command: `Scripts/perf.py --smoke" in result.stdout


def test_a_join_is_measured_with_the_other_tills_sending_meanwhile(tmp_path):
    """(h) tiny: a paired slave and a StorePOS app join a store of 2,000 orders while three other
    StorePOS tills (connected first) send a Create every 10 ms: every one of theirs is delivered
    and timed, read and at the socket, and the report has their row."""
    binary = prerequisites()
    out = tmp_path / "perf.json"
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "Scripts", "perf.py"), "--smoke", "--only", "join", "--bin", binary,
         "--out-json", str(out)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    print(result.stdout)
    j = json.loads(out.read_text())["join"]
    assert j["orders"] == 2000 and j["slave_s"] > 0 and j["storepos_s"] > 0, j
    for key in ("slave_terminals", "storepos_terminals"):
        t = j[key]
        # At least the probe's least window (1 s at 100 a second), every one delivered to both.
        assert t["delivered_ops"] >= 90 and t["receivers"] == 2, t
        lat, at = t["latency_ms"], t["arrival_ms"]
        assert 0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"], t
        assert 0 < at["p50"] <= at["p99"] <= lat["max"], t
        # Measured once the tills' own connect sequences were over (each pauses 1 s at its fences):
        # a probe that started inside one would hold half its operations for most of a second.
        assert lat["p50"] < 500, t
    assert "| other tills meanwhile: p50 / p99 / max (ms) |" in result.stdout
