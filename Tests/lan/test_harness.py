"""The LAN harness itself: hosts are isolated, Avahi works across the bridge, faults work, and
nothing is left behind."""

import json
import subprocess

import pytest

from avahi_cli import browse_until, parse_browse, parse_txt, publish, unescape
from lanharness import PYTHON, Lan, wait_until
from lan_support import require


def netns_names() -> set:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_avahi_browse_output_is_parsed():
    line = ('=;os1a2b-v2;IPv4;Test\\032POS\\.x;_pos._tcp;local;h1.local;10.231.9.1;8080;'
            '"store=abc" "proto=ordersync/1" "flag"')
    [service] = parse_browse("+;os1a2b-v2;IPv4;Test\\032POS;_pos._tcp;local\n" + line)
    assert service.name == "Test POS.x"
    assert (service.address, service.port, service.host_name) == ("10.231.9.1", 8080, "h1.local")
    assert service.txt == {"store": "abc", "proto": "ordersync/1", "flag": None}
    assert parse_txt('"a=1" "a=2"') == {"a": "1"}
    assert unescape("caf\\195\\169") == "café"


def test_hosts_are_isolated_and_named(lan3):
    names = [h.run(["hostname"]).stdout.strip() for h in lan3.hosts]
    assert names == ["h1", "h2", "h3"]
    addresses = {h.address for h in lan3.hosts}
    assert len(addresses) == 3
    for host in lan3.hosts:
        links = host.run(["ip", "-o", "link", "show"]).stdout
        assert host.interface in links
        assert "eth0" not in links
        assert host.avahi_state() == 2


def test_service_published_on_h1_is_seen_by_avahi_and_zeroconf(lan3):
    h1, h2, h3 = lan3.hosts
    process, name = publish(h1, "Test POS", "_pos._tcp", 8080, ["proto=ordersync/1", "store=abc"])
    assert name == "Test POS"

    services = browse_until(h2, lambda s: any(x.name == "Test POS" for x in s))
    [seen] = [s for s in services if s.name == "Test POS"]
    assert seen.txt == {"proto": "ordersync/1", "store": "abc"}
    assert (seen.address, seen.port, seen.host_name) == (h1.address, 8080, "h1.local")

    require(subprocess.run([PYTHON, "-c", "import zeroconf"]).returncode == 0,
            f"python-zeroconf not importable by {PYTHON} (set ORDERSYNC_PYTHON)")
    result = h3.python("zc_browse.py", "--interface", h3.address, "--type", "_pos._tcp",
                       "--min", "1", "--timeout", "20", timeout=40)
    found = json.loads(result.stdout)
    [zc] = [s for s in found if s["name"] == "Test POS"]
    assert zc["port"] == 8080
    assert zc["addresses"] == [h1.address]
    assert zc["txt"] == {"proto": "ordersync/1", "store": "abc"}
    process.kill()


def test_avahi_restart_and_link_faults(lan2):
    h1, h2 = lan2.hosts
    h1.stop_avahi()
    assert not h1.avahi_running()
    assert h1.avahi_state() is None
    h1.start_avahi()
    assert h1.avahi_state() == 2

    publish(h1, "Faulty POS", "_pos._tcp", 9000, ["proto=ordersync/1"])
    browse_until(h2, lambda s: any(x.name == "Faulty POS" for x in s))
    h1.link_down()
    assert "state DOWN" in h1.run(["ip", "-o", "link", "show", h1.interface]).stdout
    h1.link_up()
    wait_until(lambda: "DOWN" not in h1.run(["ip", "-o", "link", "show", h1.interface]).stdout,
               5, what="link up")


def test_teardown_removes_namespaces_processes_and_files():
    from lan_support import require_lan
    require_lan()
    lan = Lan(2)
    try:
        with lan:
            created = {lan.bridge_netns, *(h.netns for h in lan.hosts)}
            assert created <= netns_names()
            sleeper = lan.hosts[0].popen(["sleep", "600"])
            folder = lan.dir
            raise RuntimeError("a failing test")
    except RuntimeError:
        pass
    assert not (created & netns_names())
    assert sleeper.poll() is not None
    import os
    assert not os.path.exists(folder)
    lan.down()  # idempotent


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        Lan(2, prefix="a-very-long-prefix")
    with pytest.raises(ValueError):
        Lan(2, subnet="10.0.0.0/16")
