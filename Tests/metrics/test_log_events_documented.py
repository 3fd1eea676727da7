"""Every log event the sources emit (`event=` of a line) is documented in Docs/OPERATIONS.md's
"Log events" table, with the levels the sources log it at. Pure: reads files, runs nothing."""

import glob
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEVELS = ("trace", "debug", "info", "notice", "warning", "error", "critical")
NAME = r'"([a-z][a-z0-9_]*\.[a-z0-9_.]+)"'
# logger.info("x.y" / logger.warning(\n "x.y" / EngineLog(.debug, "x.y" / logStoreChoice("x.y"
CALL = re.compile(
    r'(?:logger\??\.(?P<level>' + "|".join(LEVELS) + r')|EngineLog|logStoreChoice)\(\s*(?:\.(?P<engine>\w+),\s*|[\w.]+,\s*)?' + NAME)
# logger.log(level: cond ? a : .warning, "x.y": the level is computed
COMPUTED = re.compile(r'logger\??\.log\(\s*level:[^"]*?,\s*' + NAME)
# logger.warning(cond ? "a.b" : "c.d"
TERNARY = re.compile(r'logger\??\.(?P<level>' + "|".join(LEVELS) + r')\(\s*[\w.]+\s*\?\s*' + NAME + r'\s*:\s*' + NAME)


def source_events() -> dict[str, set[str]]:
    """Event name -> the levels it is logged at (empty when the level is computed)."""
    events: dict[str, set[str]] = {}
    for path in glob.glob(os.path.join(REPO, "Sources", "**", "*.swift"), recursive=True):
        text = open(path).read()
        for m in CALL.finditer(text):
            level = m.group("level") or m.group("engine")
            events.setdefault(m.group(3), set()).update({level} if level in LEVELS else set())
        for m in COMPUTED.finditer(text):
            events.setdefault(m.group(1), set())
        for m in TERNARY.finditer(text):
            for name in (m.group(2), m.group(3)):
                events.setdefault(name, set()).add(m.group("level"))
    return events


def documented_events() -> dict[str, set[str]]:
    """Event name -> the levels its row in the "Log events" table names."""
    text = open(os.path.join(REPO, "Docs", "OPERATIONS.md")).read()
    section = text.split("\n## Log events", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.startswith("|"):
            continue
        levels = set(re.findall(r"[a-z]+", cells[1])) & set(LEVELS)
        for name in re.findall(r"`([a-z][a-z0-9_]*\.[a-z0-9_.]+)`", cells[0]):
            rows.setdefault(name, set()).update(levels)
    return rows


def test_the_scan_finds_the_events_it_should():
    events = source_events()
    # A few of each kind of call, so a broken pattern cannot pass the test below by finding nothing.
    assert events["node.started"] == {"info"}
    assert events["order.applied"] == {"info"}
    assert "debug" in events["op.applied"], "an engine record"
    assert events["peer.decrypt_failed"] == {"warning"}
    assert "peer.handshake_failed" in events, "a computed level"
    assert "slave.waiting_for_store" in events
    assert len(events) > 90, len(events)


def test_every_event_is_documented_with_its_levels():
    documented = documented_events()
    problems = []
    for name, levels in sorted(source_events().items()):
        if name not in documented:
            problems.append(f"{name}: not in the Log events table of Docs/OPERATIONS.md")
        elif not documented[name]:
            problems.append(f"{name}: its row names no level")
        elif not levels <= documented[name]:
            problems.append(f"{name}: logged at {sorted(levels)}, documented as {sorted(documented[name])}")
    assert not problems, "\n".join(problems)
