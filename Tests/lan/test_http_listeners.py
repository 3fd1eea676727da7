"""The HTTP listeners on a simulated LAN (Docs/SECURITY.md, "The HTTP listeners"): a master on
h1 serves the dashboard on 0.0.0.0 (beyond loopback: TLS by default) and `/metrics`; a guest on
h2 attacks them. Figures as `FIGURE ...` lines (run with `pytest -s`):

- the dashboard is https; the certificate's SHA-256 is the one `ordersync dashboard` printed;
  its key file is 0600; the login cookie is `Secure`; plain http is redirected to https;
- 100 idle connections from h2 (reopened as fast as the master closes them) do not stop a
  request from h1's own address, on the dashboard and on `/metrics`;
- half a request head is closed after the head deadline (5 s), plain and over TLS;
- a packet capture of a login and an orders read holds neither the token, nor the session
  cookie, nor the customer's name.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import subprocess

import pytest

from lanharness import HERE, PYTHON
from ordersync_lab import OrderSyncNode, ordersync_binary

HTTP_PORT = 8443
METRICS_PORT = 9420
HEAD_DEADLINE = 5.0
PEER = os.path.join(HERE, "http_peer.py")


def figure(**values) -> None:
    print("\nFIGURE " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()),
          flush=True)


def peer(host, *args: str, timeout: float = 30) -> dict:
    """Runs http_peer.py on `host`; its last JSON line."""
    result = host.run([PYTHON, PEER, *args], timeout=timeout)
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def shop():
    from lan_support import require_lan
    from lanharness import Lan
    require_lan()
    lan = Lan(2)
    try:
        lan.up()
        h1, h2 = lan.hosts
        master = OrderSyncNode.master(
            h1, name="front", extra=["--http-listen", f"0.0.0.0:{HTTP_PORT}", "--metrics-listen", f"0.0.0.0:{METRICS_PORT}"])
        master.wait_event("node.started")
        yield {"lan": lan, "master": master, "h1": h1, "h2": h2}
    finally:
        lan.down()


SESSION = """
import http.client, json, ssl, sys
host, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
c = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
c.request("POST", "/api/session", body=json.dumps({"token": token}),
          headers={"Content-Type": "application/json", "Origin": f"https://{host}:{port}"})
r = c.getresponse(); r.read()
cookie = r.getheader("Set-Cookie")
c.request("GET", "/api/orders", headers={"Cookie": cookie.split(";")[0]})
orders = c.getresponse()
print(json.dumps({"status": r.status, "cookie": cookie, "orders_status": orders.status,
                  "orders": orders.read().decode()}))
"""


def login_and_read(h2, h1, token: str) -> dict:
    """From h2: `POST /api/session` with `token`, then `GET /api/orders` with the cookie."""
    return json.loads(h2.run([PYTHON, "-c", SESSION, h1.address, str(HTTP_PORT), token]).stdout)


def test_dashboard_is_https_with_the_printed_fingerprint(shop):
    master, h1, h2 = shop["master"], shop["h1"], shop["h2"]
    printed = h1.run([ordersync_binary(), "dashboard", "--name", "office", "--data-dir", master.data_dir]).stdout
    lines = dict(line.split(": ", 1) for line in printed.splitlines() if ": " in line)
    assert lines["open"].startswith("https://"), printed
    fingerprint = lines["certificate SHA-256"].strip()
    assert len(fingerprint.split(":")) == 32, printed
    token = lines["open"].split("#token=", 1)[1]
    started = master.events("node.started")[-1]
    assert started["http.tls"] == fingerprint
    made = master.events("dashboard.certificate_made")
    assert made and made[-1]["sha256"] == fingerprint

    answer = peer(h2, "probe", f"https://{h1.address}:{HTTP_PORT}/")
    assert answer["status"] == 200
    assert answer["sha256"].upper() == fingerprint.replace(":", ""), "the certificate served is the one printed"
    # The same with Python's `ssl` client and the standard library's https client.
    session = login_and_read(h2, h1, token)
    assert session["status"] == 204, session
    assert "; Secure" in session["cookie"] and "HttpOnly" in session["cookie"], session

    key = os.stat(os.path.join(master.data_dir, "dashboard-key.pem"))
    assert stat.S_IMODE(key.st_mode) == 0o600
    # Plain http on the TLS port: a redirect to https, nothing of the dashboard.
    plain = peer(h2, "probe", f"http://{h1.address}:{HTTP_PORT}/")
    assert plain["status"] == 301 and plain["headers"]["location"] == f"https://{h1.address}:{HTTP_PORT}/", plain
    # openssl's own client agrees on the fingerprint.
    shown = subprocess.run(
        ["sh", "-c", f"openssl x509 -noout -fingerprint -sha256 -in {master.data_dir}/dashboard-cert.pem"],
        capture_output=True, text=True, check=True).stdout
    assert shown.strip().split("=", 1)[1] == fingerprint
    figure(dashboard_tls_ms=answer["ms"])


@pytest.mark.parametrize("port,scheme", [(HTTP_PORT, "https"), (METRICS_PORT, "http")], ids=["dashboard", "metrics"])
def test_idle_flood_from_one_address_does_not_lock_out_another(shop, port, scheme):
    master, h1, h2 = shop["master"], shop["h1"], shop["h2"]
    seconds = 8.0
    flood = h2.popen([PYTHON, PEER, "flood", h1.address, str(port), "100", str(seconds)],
                     stdout=subprocess.PIPE, text=True)
    ready = json.loads(flood.stdout.readline())
    assert ready["ready"], ready
    path = "/metrics" if port == METRICS_PORT else "/"
    # From h1's own LAN address while h2 holds (and reopens) its connections.
    times = []
    for _ in range(5):
        answer = peer(h1, "probe", f"{scheme}://{h1.address}:{port}{path}")
        assert answer["status"] == 200, answer
        times.append(answer["ms"])
    end = json.loads(flood.communicate(timeout=seconds + 20)[0].strip().splitlines()[-1])
    refused = master.events("dashboard.connection_refused" if port == HTTP_PORT else "metrics.connection_refused")
    assert refused, "the refusals are logged"
    assert refused[0]["peer.address"].startswith(h2.address + ":")
    assert f"connections from {h2.address} open (limit 12)" in refused[0]["reason"], refused[0]
    # At most 12 of h2's connections stay open at once: the others were closed at accept.
    assert end["closed"] >= 88, end
    figure(listener=scheme, flood_connections=100, flood_reopened=end["opened"], flood_closed=end["closed"],
           other_address_max_ms=max(times), other_address_ok=len(times))


@pytest.mark.parametrize("port,tls", [(METRICS_PORT, False), (HTTP_PORT, True)], ids=["metrics", "dashboard-tls"])
def test_half_a_request_head_is_closed_after_the_deadline(shop, port, tls):
    h1, h2 = shop["h1"], shop["h2"]
    answer = peer(h2, "half", h1.address, str(port), *(["--tls"] if tls else []))
    closed = answer["closed_after_s"]
    assert HEAD_DEADLINE - 0.5 <= closed <= HEAD_DEADLINE + 2, answer
    figure(listener="dashboard" if tls else "metrics", half_head_closed_after_s=closed)


def test_a_capture_of_a_dashboard_session_holds_no_token_cookie_or_name(shop):
    master, h1, h2 = shop["master"], shop["h1"], shop["h2"]
    tag = secrets.token_hex(4)
    name = f"Quokka{tag}"
    master.create(customer=name, note=f"walnuts {tag}")
    token = json.loads(h1.run([ordersync_binary(), "dashboard", "--name", f"capture-{tag}", "--data-dir", master.data_dir,
                               "--json"]).stdout)["token"]
    out = os.path.join(h1.dir, "dashboard-capture")
    capture = h1.popen([PYTHON, os.path.join(HERE, "packet_capture.py"), "--interface", h1.interface,
                        "--port", str(HTTP_PORT), "--out", out], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert capture.stdout.readline().strip() == "capturing"
    try:
        session = login_and_read(h2, h1, token)
    finally:
        capture.stdin.write("stop\n")
        capture.stdin.flush()
        summary = json.loads(capture.stdout.readline())
        capture.wait(timeout=10)
    # The session worked: the orders, the customer among them, reached h2.
    assert session["status"] == 204 and session["orders_status"] == 200, session
    assert name in session["orders"]
    cookie = session["cookie"].split(";")[0].split("=", 1)[1]
    with open(out + ".to-port", "rb") as f:
        captured = f.read()
    with open(out + ".from-port", "rb") as f:
        captured += f.read()
    assert summary["bytes"] > 1000, summary
    needles = [token, cookie, name, tag, "customerName", "ordersync_session", "/api/orders", "HTTP/1.1"]
    hits = {n: captured.count(n.encode()) for n in needles if captured.count(n.encode())}
    assert not hits, f"cleartext on the wire: {hits}"
    figure(dashboard_captured_bytes=summary["bytes"], dashboard_captured_segments=summary["segments"],
           dashboard_cleartext_hits=0)
