"""Announces one DNS-SD service with python-zeroconf (an mDNS responder independent of Avahi)
until it is killed: a stale or bogus announcement, for example a master's TXT record with a
port nothing listens on.

    python zc_announce.py --interface 10.231.7.3 --name Ghost --port 17469 proto=ordersync/1 store=shop1

Prints ``announced NAME`` once the service is registered. A SIGKILL sends no goodbye, so
other hosts keep the records cached, as after a crash.
"""

import argparse
import socket
import sys
import time

from zeroconf import IPVersion, ServiceInfo, Zeroconf


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--interface", required=True, help="IPv4 address to bind mDNS to and announce")
    parser.add_argument("--type", default="_pos._tcp")
    parser.add_argument("--name", required=True, help="instance name")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="ghost", help="host name for the SRV record (without .local)")
    parser.add_argument("txt", nargs="*", help="TXT entries KEY=VALUE")
    args = parser.parse_args()
    service_type = args.type.rstrip(".") + ".local."
    properties = dict(entry.split("=", 1) for entry in args.txt)
    info = ServiceInfo(
        service_type, f"{args.name}.{service_type}", addresses=[socket.inet_aton(args.interface)],
        port=args.port, properties=properties, server=f"{args.host}.local.")
    zc = Zeroconf(interfaces=[args.interface], ip_version=IPVersion.V4Only)
    zc.register_service(info, cooperating_responders=True)
    print(f"announced {args.name}", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())
