"""Browses DNS-SD services with python-zeroconf (an mDNS stack independent of Avahi) and prints
the resolved services as a JSON list.

    python zc_browse.py --interface 10.231.7.3 --type _pos._tcp --min 1 --timeout 15

Each entry: name (instance name), type, server, addresses (IPv4 strings), port, txt
(key -> value, a key without value maps to null). Exits 0 once ``--min`` services are resolved
(after ``--settle`` more seconds to collect others), or at ``--timeout`` with what it found
(exit 1 if fewer than ``--min``).
"""

import argparse
import json
import sys
import threading
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceStateChange, Zeroconf


def decode(value):
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--interface", required=True, help="IPv4 address to bind mDNS to")
    parser.add_argument("--type", default="_pos._tcp")
    parser.add_argument("--min", type=int, default=1, dest="minimum")
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--settle", type=float, default=0.5)
    args = parser.parse_args()
    service_type = args.type.rstrip(".")
    if not service_type.endswith(".local"):
        service_type += ".local"
    service_type += "."

    zc = Zeroconf(interfaces=[args.interface], ip_version=IPVersion.V4Only)
    lock = threading.Lock()
    names = set()

    def on_change(zeroconf, service_type, name, state_change):
        with lock:
            if state_change is ServiceStateChange.Removed:
                names.discard(name)
            else:
                names.add(name)

    browser = ServiceBrowser(zc, service_type, handlers=[on_change])
    resolved = {}
    deadline = time.monotonic() + args.timeout
    enough_at = None
    try:
        while time.monotonic() < deadline:
            with lock:
                pending = [n for n in names if n not in resolved]
            for name in pending:
                info = zc.get_service_info(service_type, name, 3000)
                if info is None or info.port is None:
                    continue
                instance = name[: -len(service_type) - 1] if name.endswith("." + service_type) else name
                resolved[name] = {
                    "name": instance,
                    "type": service_type,
                    "server": info.server,
                    "addresses": info.parsed_addresses(IPVersion.V4Only),
                    "port": info.port,
                    "txt": {decode(k): decode(v) for k, v in (info.properties or {}).items()},
                }
            if len(resolved) >= args.minimum:
                if enough_at is None:
                    enough_at = time.monotonic()
                elif time.monotonic() - enough_at >= args.settle:
                    break
            time.sleep(0.1)
    finally:
        browser.cancel()
        zc.close()
    json.dump(sorted(resolved.values(), key=lambda s: s["name"]), sys.stdout)
    sys.stdout.write("\n")
    return 0 if len(resolved) >= args.minimum else 1


if __name__ == "__main__":
    sys.exit(main())
