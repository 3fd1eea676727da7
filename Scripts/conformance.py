#!/usr/bin/env python3
"""Runs the Autobahn WebSocket cases (through kosoku) against OrderSync's WebSocket in both roles
and writes the per-group counts to Docs/CONFORMANCE.md.

Both roles run the daemon's WebSocket transport (`WebSocketChannel`); `ordersync-wsecho` only
plugs an echo handler (and the Autobahn client sequence) into it.

Server role: `ordersync-wsecho server` is driven by `kosoku` (fuzzingclient mode).
Client role: `kosoku -m fuzzingserver` is driven by `ordersync-wsecho client`.
Groups 12 and 13 (permessage-deflate) are excluded: no extension is implemented.

The script builds nothing: pass the echo binary with --bin (default .build/debug/ordersync-wsecho).
kosoku is looked up next to the running Python (a venv's bin directory), then on PATH.

Exit status: 0 when no case FAILED in either role, 1 when one did, 2 when the run itself could not
be carried out (missing kosoku or binary, a process that did not start, no report written).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BIN = REPO / ".build" / "debug" / "ordersync-wsecho"
DEFAULT_DOC = REPO / "Docs" / "CONFORMANCE.md"
EXCLUDES = ["12.*", "13.*"]
AGENT = "ordersync"

VERDICTS = ["OK", "NON-STRICT", "INFORMATIONAL", "FAILED", "UNIMPLEMENTED"]
# Closing-handshake verdicts that still pass (kosoku's CaseResult.passed uses the same set).
PASSING_CLOSE = {"OK", "NON-STRICT", "INFORMATIONAL"}
GROUP_NAMES = {
    "1": "Framing",
    "2": "Pings/Pongs",
    "3": "Reserved bits",
    "4": "Opcodes",
    "5": "Fragmentation",
    "6": "UTF-8 handling",
    "7": "Close handling",
    "9": "Limits/performance",
    "10": "Miscellaneous",
    "12": "permessage-deflate",
    "13": "permessage-deflate",
}


class SetupError(Exception):
    """The run could not be carried out (as opposed to a case failing)."""


# ---------------------------------------------------------------------------------------------
# Locating the tools


def find_kosoku(explicit: str | None = None) -> Path | None:
    """kosoku from --kosoku, else next to sys.executable (a venv), else on PATH."""
    if explicit:
        path = Path(explicit)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    beside = Path(sys.executable).parent / "kosoku"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("kosoku")
    return Path(found) if found else None


def kosoku_version(kosoku: Path) -> str:
    """The installed kosoku distribution's version, asked of the Python that runs kosoku."""
    python = kosoku.parent / "python"
    if not python.exists():
        first = kosoku.read_bytes()[:200].split(b"\n", 1)[0]
        python = Path(first[2:].decode().strip()) if first.startswith(b"#!") else Path(sys.executable)
    try:
        out = subprocess.run(
            [str(python), "-c", "import importlib.metadata as m; print(m.version('kosoku'))"],
            capture_output=True, text=True, timeout=30,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ---------------------------------------------------------------------------------------------
# Processes


class LineReader:
    """Drains a child's pipe on a thread, copying it to a log file and queueing its lines, so
    a caller can wait for a given line without the child ever blocking on a full pipe."""

    def __init__(self, stream, log_path: Path):
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log = open(log_path, "w", encoding="utf-8", errors="replace")
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            self.log.write(line)
            self.log.flush()
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, prefix: str, deadline: float) -> str:
        """The first line starting with `prefix`; raises SetupError on end of stream or timeout."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SetupError(f"timed out waiting for a line starting with {prefix!r}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise SetupError(f"stream ended before a line starting with {prefix!r}")
            if line.startswith(prefix):
                return line

    def close(self) -> None:
        self.thread.join(timeout=5)
        self.log.close()


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within 5 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def display(command: list[str], reports: Path, binary: Path | None = None) -> str:
    """A command line for the report: the echo binary and kosoku by name, repository paths made
    relative, the report folder shown as `REPORTS`."""
    shown = []
    for arg in command:
        text = str(arg)
        if binary is not None and Path(text).resolve() == binary:
            text = "ordersync-wsecho"
        elif text.endswith("/kosoku"):
            text = "kosoku"
        elif text.startswith(str(reports)):
            text = "REPORTS" + text[len(str(reports)):]
        elif text.startswith(str(REPO) + "/"):
            text = text[len(str(REPO)) + 1:]
        shown.append(text)
    return shlex.join(shown)


@dataclass
class RoleRun:
    """What one role's run produced."""

    role: str
    commands: list[str] = field(default_factory=list)
    seconds: float = 0.0
    kosoku_status: int | None = None
    peer_status: int | None = None
    cases: dict[str, dict] = field(default_factory=dict)

    def verdicts(self) -> dict[str, str]:
        return {case_id: verdict(entry) for case_id, entry in self.cases.items()}


def run_server_role(binary: Path, kosoku: Path, reports: Path, timeout: float) -> RoleRun:
    """kosoku (fuzzingclient) against `ordersync-wsecho server`."""
    run = RoleRun("server")
    outdir = reports / "server"
    deadline = time.monotonic() + timeout
    start = time.monotonic()
    server_cmd = [str(binary), "server", "--host", "127.0.0.1", "--port", "0"]
    server = subprocess.Popen(server_cmd, stdout=subprocess.PIPE, stderr=open(reports / "server-echo.err", "w"))
    reader = LineReader(server.stdout, reports / "server-echo.out")
    try:
        port = int(reader.wait_for("listening ", min(deadline, time.monotonic() + 30)).split()[1])
        kosoku_cmd = [str(kosoku), *sum((["-x", x] for x in EXCLUDES), []), "-o", str(outdir), f"127.0.0.1:{port}"]
        run.commands = [display(server_cmd, reports, binary), display(kosoku_cmd, reports)]
        with open(reports / "server-kosoku.log", "w") as log:
            try:
                run.kosoku_status = subprocess.run(kosoku_cmd, stdout=log, stderr=subprocess.STDOUT,
                                                   timeout=max(1, deadline - time.monotonic())).returncode
            except subprocess.TimeoutExpired as error:
                raise SetupError(f"kosoku did not finish within {timeout:.0f} s (server role)") from error
        run.peer_status = server.poll()
    finally:
        stop(server)
        reader.close()
    run.seconds = time.monotonic() - start
    run.cases = read_index(outdir)
    return run


def run_client_role(binary: Path, kosoku: Path, reports: Path, timeout: float) -> RoleRun:
    """`ordersync-wsecho client` against kosoku (fuzzingserver)."""
    run = RoleRun("client")
    outdir = reports / "client"
    deadline = time.monotonic() + timeout
    start = time.monotonic()
    kosoku_cmd = [str(kosoku), "-m", "fuzzingserver", *sum((["-x", x] for x in EXCLUDES), []),
                  "-o", str(outdir), "127.0.0.1:0"]
    fuzzer = subprocess.Popen(kosoku_cmd, stdout=open(reports / "client-kosoku.out", "w"), stderr=subprocess.PIPE)
    reader = LineReader(fuzzer.stderr, reports / "client-kosoku.err")
    try:
        line = reader.wait_for("fuzzingserver listening on ", min(deadline, time.monotonic() + 30))
        url = line.split()[-1]
        client_cmd = [str(binary), "client", "--url", url, "--agent", AGENT]
        run.commands = [display(kosoku_cmd, reports), display(client_cmd, reports, binary)]
        with open(reports / "client-echo.log", "w") as log:
            try:
                run.peer_status = subprocess.run(client_cmd, stdout=log, stderr=subprocess.STDOUT,
                                                 timeout=max(1, deadline - time.monotonic())).returncode
            except subprocess.TimeoutExpired as error:
                raise SetupError(f"ordersync-wsecho client did not finish within {timeout:.0f} s") from error
        try:
            run.kosoku_status = fuzzer.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired as error:
            raise SetupError("kosoku fuzzingserver did not finish after the client's run") from error
    finally:
        stop(fuzzer)
        reader.close()
    run.seconds = time.monotonic() - start
    run.cases = read_index(outdir)
    return run


# ---------------------------------------------------------------------------------------------
# Reports


def read_index(outdir: Path) -> dict[str, dict]:
    """kosoku's index.json (Autobahn's format: {agent: {case id: {behavior, behaviorClose,
    remoteCloseCode, duration, reportfile}}}) flattened to {case id: entry}; one agent expected."""
    index_path = outdir / "index.json"
    if not index_path.is_file():
        raise SetupError(f"kosoku wrote no report index at {index_path}")
    index = json.loads(index_path.read_text())
    cases: dict[str, dict] = {}
    for agent_cases in index.values():
        cases.update(agent_cases)
    if not cases:
        raise SetupError(f"{index_path} lists no cases")
    return cases


def verdict(entry: dict) -> str:
    """A case's verdict: its message-exchange verdict, or FAILED when the closing handshake
    failed (kosoku counts such a case as failed too). Unknown labels count as FAILED."""
    behavior = entry.get("behavior", "FAILED")
    if behavior not in VERDICTS:
        return "FAILED"
    if behavior != "UNIMPLEMENTED" and entry.get("behaviorClose") not in PASSING_CLOSE:
        return "FAILED"
    return behavior


def case_key(case_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in case_id.split("."))


def group_counts(run: RoleRun) -> dict[str, collections.Counter]:
    groups: dict[str, collections.Counter] = {}
    for case_id, result in sorted(run.verdicts().items(), key=lambda item: case_key(item[0])):
        groups.setdefault(case_id.split(".")[0], collections.Counter())[result] += 1
    return groups


def totals(run: RoleRun) -> collections.Counter:
    return collections.Counter(run.verdicts().values())


def role_table(run: RoleRun) -> list[str]:
    lines = [
        "| Group | Topic | Cases | " + " | ".join(VERDICTS) + " |",
        "| ---: | --- | ---: | " + " | ".join("---:" for _ in VERDICTS) + " |",
    ]
    for group, counts in group_counts(run).items():
        cells = " | ".join(str(counts[v]) for v in VERDICTS)
        lines.append(f"| {group} | {GROUP_NAMES.get(group, '')} | {sum(counts.values())} | {cells} |")
    total = totals(run)
    cells = " | ".join(f"**{total[v]}**" for v in VERDICTS)
    lines.append(f"| **all** | | **{sum(total.values())}** | {cells} |")
    return lines


def notable_cases(run: RoleRun) -> list[str]:
    lines = []
    for case_id in sorted(run.cases, key=case_key):
        entry = run.cases[case_id]
        result = verdict(entry)
        if result != "OK" or entry.get("behaviorClose") != "OK":
            lines.append(f"- {case_id}: {result} (message exchange {entry.get('behavior')}, closing "
                         f"{entry.get('behaviorClose')}, peer close code {entry.get('remoteCloseCode')})")
    return lines


def render(runs: list[RoleRun], version: str, invocation: str, started: datetime.datetime) -> str:
    titles = {"server": "Server role: kosoku drives `ordersync-wsecho server`",
              "client": "Client role: `ordersync-wsecho client` drives kosoku's fuzzing server"}
    out = [
        "# WebSocket conformance (Autobahn cases)",
        "",
        "<!-- Generated by Scripts/conformance.py. Do not edit by hand: run the script again. -->",
        "",
        "This file is generated by `Scripts/conformance.py`. It runs the Autobahn|Testsuite case files",
        "through kosoku (a Python package) against the project's own WebSocket",
        "implementation in both roles: the `WebSocketChannel` transport (module `WebSocketTransport`",
        "over `WebSocket` and `EventLoopIO`) that the master and the slave run, with the `ordersync-wsecho`",
        "test executable plugging an echo handler into it. Groups 12 and 13 (permessage-deflate) are excluded because no",
        "extension is implemented. The gate is 0 FAILED in both roles; the goal is also 0 NON-STRICT.",
        "",
        f"- Date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- kosoku version: {version}",
        f"- Command: `{invocation}`",
        "",
        "To reproduce:",
        "",
        "```",
        "swift build --product ordersync-wsecho",
        "python3 -m venv .venv && .venv/bin/pip install kosoku",
        ".venv/bin/python Scripts/conformance.py   # or: pytest Tests/conformance",
        "```",
        "",
        "A case counts as FAILED when its message exchange failed or when its closing handshake did",
        "(wrong close code, unclean close, or the wrong side closing TCP). INFORMATIONAL cases probe",
        "behaviour the RFC leaves open.",
    ]
    for run in runs:
        out += ["", f"## {titles[run.role]}", ""]
        out += [f"- `{command}`" for command in run.commands]
        out += [f"- Run time: {run.seconds:.1f} s", ""]
        out += role_table(run)
        notable = notable_cases(run)
        if notable:
            out += ["", "Cases other than OK:", ""] + notable
    return "\n".join(out) + "\n"


def summary_line(run: RoleRun) -> str:
    total = totals(run)
    counts = ", ".join(f"{total[v]} {v}" for v in VERDICTS)
    return f"{run.role}: {sum(total.values())} cases: {counts} ({run.seconds:.1f} s)"


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(DEFAULT_BIN), help="the ordersync-wsecho executable")
    parser.add_argument("--kosoku", help="the kosoku executable (default: beside this Python, then PATH)")
    parser.add_argument("--roles", nargs="+", choices=["server", "client"], default=["server", "client"])
    parser.add_argument("--reports", help="folder for kosoku's reports and logs (default: a new temp folder)")
    parser.add_argument("--doc", default=str(DEFAULT_DOC), help="Markdown file to write ('' to skip)")
    parser.add_argument("--json", help="also write the per-role counts as JSON here")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per role")
    args = parser.parse_args(argv)

    started = datetime.datetime.now(datetime.timezone.utc)
    binary = Path(args.bin).resolve()
    kosoku = find_kosoku(args.kosoku)
    if not binary.is_file() or not os.access(binary, os.X_OK):
        print(f"conformance: no executable at {binary} (build it with `swift build --product ordersync-wsecho`)",
              file=sys.stderr)
        return 2
    if kosoku is None:
        print("conformance: kosoku not found beside this Python nor on PATH (pip install kosoku)", file=sys.stderr)
        return 2
    reports = Path(args.reports).resolve() if args.reports else Path(tempfile.mkdtemp(prefix="autobahn-"))
    reports.mkdir(parents=True, exist_ok=True)
    for role in args.roles:
        shutil.rmtree(reports / role, ignore_errors=True)
    version = kosoku_version(kosoku)
    print(f"conformance: kosoku {version} at {kosoku}; {binary}; reports in {reports}", flush=True)

    runs: list[RoleRun] = []
    try:
        for role in args.roles:
            runner = run_server_role if role == "server" else run_client_role
            run = runner(binary, kosoku, reports, args.timeout)
            runs.append(run)
            print(f"conformance: {summary_line(run)}", flush=True)
    except SetupError as error:
        print(f"conformance: {error} (logs in {reports})", file=sys.stderr)
        return 2

    shown = display(list(sys.argv[1:] if argv is None else argv), reports, binary)
    invocation = f"python3 Scripts/conformance.py {shown}".strip()
    if args.doc:
        Path(args.doc).write_text(render(runs, version, invocation, started))
        print(f"conformance: wrote {args.doc}")
    if args.json:
        data = {
            "kosoku": version,
            "date": started.isoformat(timespec="seconds"),
            "roles": {
                run.role: {
                    "seconds": round(run.seconds, 1),
                    "totals": {v: totals(run)[v] for v in VERDICTS},
                    "groups": {g: {v: c[v] for v in VERDICTS} for g, c in group_counts(run).items()},
                    "notOK": {cid: verdict(e) for cid, e in run.cases.items() if verdict(e) != "OK"},
                    "kosokuStatus": run.kosoku_status,
                    "peerStatus": run.peer_status,
                }
                for run in runs
            },
        }
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")

    failed = [run for run in runs if totals(run)["FAILED"] > 0]
    # A peer that exited with an error (e.g. a case whose connection never opened) or kosoku
    # reporting a failure the counts do not show is a failure too.
    broken = [run for run in runs if run.kosoku_status not in (0, None) or run.peer_status not in (0, None, -signal.SIGTERM)]
    for run in broken:
        print(f"conformance: {run.role} role: kosoku exit {run.kosoku_status}, ordersync-wsecho exit {run.peer_status}",
              file=sys.stderr)
    if failed or broken:
        print("conformance: FAILED", file=sys.stderr)
        return 1
    print("conformance: 0 FAILED in " + " and ".join(run.role for run in runs) + " role" + ("s" if len(runs) > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
