"""The change feed (`GET /v1/changes`, Docs/API.md "Change feed") with real processes: long-poll
that wakes on a change and times out empty, server-sent events read by an independent client
(Python's http.client over the Unix socket), a reader that disconnects and resumes with
Last-Event-ID across a master restart (nothing missed, nothing twice), journal entries replayed
as they were (not as the order is now), 410 resnapshot_required for a cursor the journal no
longer covers or from another database, a slave's feed with a pending change and its outcome,
and `ordersync watch --json`."""

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
import uuid as uuidlib

from lanharness import wait_until
from ordersync_lab import OrderSyncNode, UnixHTTPConnection, ordersync_binary

FAST = ["--ping-interval", "1", "--peer-timeout", "3"]


def sock(node: OrderSyncNode) -> str:
    return os.path.join(node.data_dir, "ordersync.sock")


def get(node: OrderSyncNode, path: str, headers: dict | None = None, timeout: float = 30):
    """GET on the node's local API: status, headers, parsed JSON body."""
    conn = UnixHTTPConnection(sock(node))
    conn.timeout = timeout
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), json.loads(r.read())
    finally:
        conn.close()


class EventStream:
    """A server-sent event reader on http.client: one event per `next()`."""

    def __init__(self, node: OrderSyncNode, since: int | None = None, last_event_id: int | None = None,
                 query: str = ""):
        self.conn = UnixHTTPConnection(sock(node))
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        path = "/v1/changes" + (f"?since={since}" if since is not None else "") + query
        self.conn.request("GET", path, headers=headers)
        self.sock = self.conn.sock  # http.client lets go of it once a response says Connection: close
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.headers = dict(self.response.getheaders())
        self.comments = 0

    def next(self, timeout: float = 10) -> dict | None:
        """The next event as {"id","event","data"(parsed)}; None when the stream ended."""
        self.sock.settimeout(timeout)
        fields: dict = {}
        while True:
            line = self.response.fp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\r\n")
            if line == "":
                if fields:
                    fields["data"] = json.loads(fields["data"])
                    return fields
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value

    def wait_comment(self, timeout: float) -> bool:
        """Reads until a comment line (a keepalive) arrives; False if an event or the end comes first."""
        self.sock.settimeout(timeout)
        while True:
            line = self.response.fp.readline()
            if not line or line.startswith(b"data:"):
                return False
            if line.startswith(b":"):
                self.comments += 1
                return True

    def close(self):
        self.response.close()
        self.sock.close()
        self.conn.close()


def one_master(make_lan) -> OrderSyncNode:
    """A master alone on a one-host LAN, its local API answering."""
    (h1,) = make_lan(1).hosts
    master = OrderSyncNode.master(h1, store="shop1")
    master.wait_api()
    return master


def live_slave(lan2) -> tuple:
    """A master on h1 and a slave on h2, live: (h2, master, slave)."""
    h1, h2 = lan2.hosts
    master = OrderSyncNode.master(h1, store="shop1", extra=FAST)
    slave = OrderSyncNode.slave(h2, extra=FAST)
    slave.wait_live()
    return h2, master, slave


def journal_seqs(node: OrderSyncNode) -> list[int]:
    with sqlite3.connect(f"file:{node.data_dir}/ordersync.sqlite?mode=ro", uri=True) as db:
        return [r[0] for r in db.execute("SELECT seq FROM journal ORDER BY seq")]


def test_long_poll_wakes_on_a_change_and_times_out_empty(make_lan):
    master = one_master(make_lan)
    status, headers, body = get(master, "/v1/changes?since=0")
    assert status == 200 and body == {"changes": [], "last": 0}, body
    epoch = headers["OrderSync-Epoch"]
    assert epoch == master.status()["epoch"]

    # Nothing after 0 yet: the request waits, and the loop keeps serving others meanwhile.
    answer: dict = {}

    def poll():
        t0 = time.monotonic()
        answer["result"] = get(master, "/v1/changes?since=0&timeout=20")
        answer["seconds"] = time.monotonic() - t0

    waiter = threading.Thread(target=poll)
    waiter.start()
    # The master logs the long-poll parked (on its loop, after reading and routing it): from then
    # on it must still be waiting.
    master.wait_event("api.feed_parked", timeout=10, where=lambda e: str(e.get("seq")) == "0")
    assert "result" not in answer
    t0 = time.monotonic()
    master.status()
    assert time.monotonic() - t0 < 2, "a parked long-poll blocked the local API"
    created = master.create("Poll", note="one")
    waiter.join(10)
    assert not waiter.is_alive()
    status, _, body = answer["result"]
    assert status == 200 and answer["seconds"] < 10, answer
    assert [c["seq"] for c in body["changes"]] == [1] and body["last"] == 1
    change = body["changes"][0]
    assert change["operation"] == "create" and change["orders"][0]["uuid"] == created["uuid"]
    assert change["orders"][0]["customerName"] == "Poll" and change["opId"] is not None
    assert change["at"].endswith("Z") and "local API" in change["origin"]

    # Nothing after 1: an empty answer once the timeout passes.
    t0 = time.monotonic()
    status, _, body = get(master, "/v1/changes?since=1&timeout=1")
    elapsed = time.monotonic() - t0
    assert status == 200 and body == {"changes": [], "last": 1} and 0.9 <= elapsed < 5, (body, elapsed)

    # Bad queries are refused clearly.
    for q in ("since=-1", "limit=0", "limit=1001", "timeout=61", "since=x"):
        status, _, body = get(master, f"/v1/changes?{q}")
        assert status == 400 and body["error"]["code"] == "invalid_query", (q, body)
    conn = UnixHTTPConnection(sock(master))
    conn.request("POST", "/v1/changes", body=b"")
    r = conn.getresponse()
    assert r.status == 405 and r.getheader("Allow") == "GET, HEAD" and json.loads(r.read())["error"]["code"] == "method_not_allowed"
    # HEAD is answered as GET at once, with the same head and no body (a long-poll does not
    # wait for it), and the connection goes on.
    conn.request("GET", "/v1/changes?since=0")
    r = conn.getresponse()
    got_headers, got_body = dict(r.getheaders()), r.read()
    t0 = time.monotonic()
    conn.request("HEAD", "/v1/changes?since=1&timeout=30")
    r = conn.getresponse()
    assert r.status == 200 and r.read() == b"" and time.monotonic() - t0 < 5
    conn.request("HEAD", "/v1/changes?since=0")
    r = conn.getresponse()
    head_headers = dict(r.getheaders())
    assert r.status == 200 and r.read() == b""
    strip = {"Date"}
    assert {k: v for k, v in head_headers.items() if k not in strip} == {k: v for k, v in got_headers.items() if k not in strip}
    assert int(head_headers["Content-Length"]) == len(got_body) and head_headers["OrderSync-Epoch"]
    # A stale cursor's HEAD is the 410's head.
    conn.request("HEAD", "/v1/changes?since=99")
    r = conn.getresponse()
    assert r.status == 410 and r.read() == b"" and int(r.getheader("Content-Length")) > 0
    # An event stream's HEAD: its head, then the connection ends (no events, no wait).
    stream_head = UnixHTTPConnection(sock(master))
    stream_head.request("HEAD", "/v1/changes?since=0", headers={"Accept": "text/event-stream"})
    r = stream_head.getresponse()
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/event-stream") and r.read() == b""
    assert r.getheader("OrderSync-Epoch") == head_headers["OrderSync-Epoch"]
    stream_head.close()
    conn.request("GET", "/v1/changes?since=0")
    r = conn.getresponse()
    assert r.status == 200 and json.loads(r.read())["last"] == 1
    conn.close()


def test_the_feed_replays_each_entry_as_it_was_and_removals_as_tombstones(make_lan):
    master = one_master(make_lan)
    u = master.create("First name")["uuid"]
    master.update(u, customer="Second name")
    master.update(u, customer="Third name")
    master.remove(u)
    status, _, body = get(master, "/v1/changes?since=0&limit=2")
    assert status == 200 and [c["seq"] for c in body["changes"]] == [1, 2] and body["last"] == 2
    _, _, body = get(master, "/v1/changes?since=0")
    changes = body["changes"]
    assert [c["operation"] for c in changes] == ["create", "update", "update", "remove"]
    assert [c["orders"][0].get("customerName") for c in changes[:3]] == ["First name", "Second name", "Third name"]
    assert [c["orders"][0]["version"] for c in changes] == [1, 2, 3, changes[3]["orders"][0]["version"]]
    assert changes[3]["orders"][0] == {"uuid": u, "removed": True, "version": changes[3]["orders"][0]["version"]}


def test_sse_delivers_live_changes_and_resumes_across_a_master_restart(make_lan):
    master = one_master(make_lan)
    for i in range(3):
        master.create(f"before-{i}")

    seen: list[int] = []
    stream = EventStream(master, since=0)
    assert stream.status == 200 and stream.headers["Content-Type"].startswith("text/event-stream")
    for _ in range(3):
        e = stream.next()
        assert e["event"] == "change" and int(e["id"]) == e["data"]["seq"]
        seen.append(e["data"]["seq"])
    # Live: a change made now arrives on the open stream.
    live = master.create("live")
    e = stream.next()
    assert e["data"]["orders"][0]["uuid"] == live["uuid"]
    seen.append(e["data"]["seq"])
    stream.close()

    # Writes while no reader is connected, a restart (SIGTERM), writes after it.
    master.create("gone-1")
    master.update(live["uuid"], customer="live, renamed")
    assert master.stop(signal.SIGTERM) == 0
    master.start()
    master.wait_api()
    master.create("after-restart")

    stream = EventStream(master, last_event_id=seen[-1])
    assert stream.status == 200
    last = journal_seqs(master)[-1]
    while seen[-1] < last:
        e = stream.next()
        assert e is not None, "the stream ended early"
        seen.append(e["data"]["seq"])
    # And a change after the resumed stream opened.
    master.create("after-resume")
    seen.append(stream.next()["data"]["seq"])
    stream.close()
    assert seen == journal_seqs(master) == list(range(1, len(seen) + 1)), seen

    # `since` works the same as Last-Event-ID; Last-Event-ID wins when both are given.
    stream = EventStream(master, since=0, last_event_id=len(seen) - 1)
    assert stream.next()["data"]["seq"] == len(seen)
    # An idle stream gets a keepalive comment every 15 s.
    t0 = time.monotonic()
    assert stream.wait_comment(timeout=20)
    assert 13 < time.monotonic() - t0 < 20
    stream.close()


def test_a_cursor_older_than_the_journal_or_from_another_database_gets_410(make_lan):
    master = one_master(make_lan)
    for i in range(5):
        master.create(f"order-{i}")
    epoch = master.status()["epoch"]
    assert master.stop() == 0
    # Journal compaction as the master does it (the oldest entries go): 1...3 are no longer kept.
    with sqlite3.connect(os.path.join(master.data_dir, "ordersync.sqlite")) as db:
        db.execute("DELETE FROM journal_orders WHERE seq <= 3")
        db.execute("DELETE FROM journal WHERE seq <= 3")
    master.start()
    master.wait_api()

    status, headers, body = get(master, "/v1/changes?since=1")
    assert status == 410, body
    assert body["error"]["code"] == "resnapshot_required" and body["error"]["oldest"] == 3
    assert body["error"]["epoch"] == epoch == headers["OrderSync-Epoch"]
    # The oldest cursor still covered is answered.
    status, _, body = get(master, "/v1/changes?since=3")
    assert status == 200 and [c["seq"] for c in body["changes"]] == [4, 5]
    # Another epoch, or a cursor from the future: resnapshot too.
    status, _, body = get(master, "/v1/changes?since=4&epoch=00000000-0000-4000-8000-000000000000")
    assert status == 410 and body["error"]["code"] == "resnapshot_required"
    status, _, body = get(master, f"/v1/changes?since=4&epoch={epoch}")
    assert status == 200 and [c["seq"] for c in body["changes"]] == [5]
    status, _, body = get(master, "/v1/changes?since=99")
    assert status == 410 and body["error"]["code"] == "resnapshot_required"
    # Server-sent events: the same 410 before any stream starts.
    stream = EventStream(master, since=0)
    assert stream.status == 410 and stream.headers["Content-Type"] == "application/json"
    assert json.loads(stream.response.read())["error"]["code"] == "resnapshot_required"
    stream.close()


def test_a_slave_feed_shows_a_pending_change_while_the_master_is_down_and_then_its_outcome(lan2):
    h2, master, slave = live_slave(lan2)
    made = master.create("from the master")

    def feed_after(since: int) -> list[dict]:
        return get(slave, f"/v1/changes?since={since}")[2]["changes"]

    applied = wait_until(lambda: [c for c in feed_after(0) if c["operation"] == "create"], 10,
                         what="the master's change on the slave's feed")
    assert applied[0]["orders"][0]["uuid"] == made["uuid"] and applied[0]["masterSeq"] == 1
    assert "pending" not in applied[0]
    _, headers, body = get(slave, "/v1/changes?since=0")
    assert headers["OrderSync-Epoch"] != master.status()["epoch"]  # the slave's own cursors
    cursor = body["last"]

    assert master.stop() == 0
    wait_until(lambda: slave.status()["master"]["state"] != "live", 15, what="the slave to notice")
    local = slave.create("taken offline")
    stream = EventStream(slave, since=cursor)
    e = stream.next()
    pending = e["data"]
    assert pending["pending"] is True and pending["operation"] == "create"
    assert pending["orders"][0]["uuid"] == local["uuid"] and pending["opId"]

    master.start()
    e = stream.next(timeout=30)
    while e["data"]["operation"] != "outcome":
        e = stream.next(timeout=30)
    outcome = e["data"]
    assert outcome["opId"] == pending["opId"] and outcome["outcome"] == "synced"
    assert outcome["masterSeq"] == 2 and outcome["seq"] > pending["seq"]
    stream.close()
    # The master's change for it is there too, with the master's seq.
    assert any(c.get("masterSeq") == 2 and c["operation"] == "create" and "pending" not in c
               for c in feed_after(cursor))


def test_a_slave_feed_shows_the_masters_refusal_of_a_pending_change(lan2):
    h2, master, slave = live_slave(lan2)
    order = slave.create(customer="Kim")
    wait_until(lambda: get(slave, "/v1/changes?since=0")[2]["changes"][-1].get("outcome") == "synced", 10,
               what="the create to be synced")
    cursor = get(slave, "/v1/changes?since=0")[2]["last"]
    h2.link_down()
    wait_until(lambda: slave.status()["master"]["state"] != "live", 10, what="the slave to notice")
    master.cli("order", "update", order["uuid"], "--status", "in_progress")
    master.cli("order", "update", order["uuid"], "--status", "completed")
    slave.cli("order", "update", order["uuid"], "--table", "T9", "--json")
    _, _, body = get(slave, f"/v1/changes?since={cursor}")
    (pending,) = body["changes"]
    assert pending["pending"] is True and pending["orders"][0]["tableName"] == "T9"
    # The long-poll is answered by the outcome once the link is back.
    h2.link_up()
    outcome = None
    since = body["last"]
    deadline = time.monotonic() + 40
    while outcome is None and time.monotonic() < deadline:
        status, _, body = get(slave, f"/v1/changes?since={since}&timeout=30")
        assert status == 200
        since = body["last"]
        outcome = next((c for c in body["changes"] if c["operation"] == "outcome"), None)
    assert outcome is not None, "no outcome on the slave's feed"
    assert outcome["opId"] == pending["opId"] and outcome["outcome"] == "rejected", outcome
    assert outcome["error"]["code"] == "invalid_transition" and outcome["error"]["uuid"].lower() == order["uuid"].lower()
    # The replica goes back to the master's truth: a snapshot follows on the feed.
    wait_until(lambda: any(c["operation"] == "snapshot" for c in get(slave, f"/v1/changes?since={outcome['seq']}")[2]["changes"]),
               30, what="the resnapshot on the slave's feed")


def test_watch_json_prints_the_changes(make_lan):
    master = one_master(make_lan)
    master.create("old")
    watch = subprocess.Popen([ordersync_binary(), "watch", "--data-dir", master.data_dir, "--json", "--since", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(watch.stdout.readline())
        assert first["seq"] == 1 and first["orders"][0]["customerName"] == "old"
        u = str(uuidlib.uuid4())
        master.create("new", uuid=u)
        second = json.loads(watch.stdout.readline())
        assert second["seq"] == 2 and second["orders"][0]["uuid"].lower() == u
        # The master restarts: watch reconnects and carries on after the last change it printed.
        assert master.stop() == 0
        master.start()
        master.wait_api()
        master.create("after restart")
        third = json.loads(watch.stdout.readline())
        assert third["seq"] == 3 and third["orders"][0]["customerName"] == "after restart"
    finally:
        watch.terminate()
        watch.wait(10)
    # Human lines by default.
    watch = subprocess.Popen([ordersync_binary(), "watch", "--data-dir", master.data_dir, "--since", "3"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        master.create("human")
        line = watch.stdout.readline()
        assert line.startswith("4  ") and "  create  " in line and "(human, open, v1)" in line, line
    finally:
        watch.terminate()
        watch.wait(10)
