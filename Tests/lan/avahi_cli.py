"""Drives Avahi's command-line tools (avahi-publish, avahi-browse) on LAN hosts."""

from __future__ import annotations

import re
import select
import subprocess
import time
from dataclasses import dataclass, field

from lanharness import Host, LanError


@dataclass
class BrowsedService:
    """One resolved line (``=``) of ``avahi-browse -rpt``."""

    interface: str
    protocol: str
    name: str
    type: str
    domain: str
    host_name: str
    address: str
    port: int
    txt: dict = field(default_factory=dict)


def unescape(label: str) -> str:
    r"""Undoes avahi-browse's escaping of names (``\032`` is a space, ``\.`` a dot)."""
    out = bytearray()
    i = 0
    raw = label.encode()
    while i < len(raw):
        if raw[i] == ord("\\") and i + 4 <= len(raw) and raw[i + 1:i + 4].isdigit():
            out.append(int(raw[i + 1:i + 4]))
            i += 4
        elif raw[i] == ord("\\") and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")


def parse_txt(field_text: str) -> dict:
    """Parses avahi-browse's TXT column (``"k=v" "k2=v2"``) into a dict; first key wins."""
    txt = {}
    for item in re.findall(r'"((?:[^"\\]|\\.)*)"', field_text):
        key, sep, value = item.partition("=")
        if key and key not in txt:
            txt[key] = value if sep else None
    return txt


def parse_browse(output: str) -> list[BrowsedService]:
    """Parses the resolved (``=``) lines of ``avahi-browse -p -r`` output."""
    services = []
    for line in output.splitlines():
        parts = line.split(";", 9)
        if len(parts) < 9 or parts[0] != "=":
            continue
        services.append(BrowsedService(
            interface=parts[1], protocol=parts[2], name=unescape(parts[3]), type=parts[4],
            domain=parts[5], host_name=parts[6], address=parts[7], port=int(parts[8]),
            txt=parse_txt(parts[9] if len(parts) > 9 else "")))
    return services


def browse(host: Host, service_type: str = "_pos._tcp") -> list[BrowsedService]:
    """One ``avahi-browse -rpt`` on ``host``: the services resolved from its cache and one query."""
    return parse_browse(host.run(["avahi-browse", "-rpt", service_type], timeout=30).stdout)


def browse_until(host: Host, predicate, service_type: str = "_pos._tcp",
                 timeout: float = 20) -> list[BrowsedService]:
    """Repeats ``browse`` until ``predicate(services)`` holds; returns the services. Raises
    LanError with the last result after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        services = browse(host, service_type)
        if predicate(services):
            return services
        if time.monotonic() >= deadline:
            raise LanError(f"{host.name}: browsing {service_type} never matched; last saw {services}")
        time.sleep(0.2)


def read_line_matching(process: subprocess.Popen, pattern: str, timeout: float) -> re.Match:
    """Reads ``process``'s (text, line-buffered) stdout until a line matches ``pattern``."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LanError(f"timed out waiting for /{pattern}/; output so far: {seen}")
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if not ready:
            continue
        line = process.stdout.readline()
        if line == "":
            raise LanError(f"process exited ({process.poll()}) before /{pattern}/; output: {seen}")
        seen.append(line.rstrip("\n"))
        match = re.search(pattern, line)
        if match:
            return match


def publish(host: Host, name: str, service_type: str, port: int, txt: list[str],
            timeout: float = 20) -> tuple[subprocess.Popen, str]:
    """Starts ``avahi-publish -s`` on ``host`` and waits until the service is established;
    returns the process (kill it to withdraw) and the established name (Avahi may rename)."""
    process = host.popen(["stdbuf", "-oL", "avahi-publish", "-s", name, service_type, str(port), *txt],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    match = read_line_matching(process, r"Established under name '(.*)'", timeout)
    return process, match.group(1)
