"""`ordersync rollup` into a real PostgreSQL (initdb in a temporary folder, on loopback, started
by the test; the roll-up runs beside the shops and reaches their files and local API sockets):
two shops, one with a standby till, into one head office. `--once` then `verify` exit 0, head
office's rows equal each local journal (0 gaps, 0 duplicates), a second `--once` ships nothing,
the standby's copy verifies equal too, a follow-mode roll-up ships a new order within seconds
(awaited, no sleeps), a tampered head-office row makes verify exit 1 naming its seq, and a
conflicting row makes the roll-up stop with exit 65 and an alarm."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from lan_support import require
from lanharness import wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary, read_sqlite
from postgres_lab import postgres_tool

pytestmark = pytest.mark.usefixtures("ordersync_built")

FAST = ["--ping-interval", "1", "--peer-timeout", "3"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HeadOffice:
    """A throw-away PostgreSQL: initdb in a temporary folder, listening on 127.0.0.1 only."""

    def __init__(self):
        # Debian keeps initdb and pg_ctl in /usr/lib/postgresql/<version>/bin, off PATH.
        self.initdb, self.pg_ctl = postgres_tool("initdb"), postgres_tool("pg_ctl")
        require(self.initdb is not None and self.pg_ctl is not None and shutil.which("psql") is not None,
                "PostgreSQL's initdb, pg_ctl and psql are needed (apt: postgresql, or Scripts/setup.sh)")
        self.dir = tempfile.mkdtemp(prefix="ordersync-rollup-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        run_as = [] if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--"]
        if run_as:
            shutil.chown(self.dir, "postgres")
        self.run_as = run_as
        subprocess.run(run_as + [self.initdb, "-D", self.data, "-U", "postgres", "--auth=trust"], check=True,
                       capture_output=True, timeout=120)
        subprocess.run(run_as + [self.pg_ctl, "-D", self.data, "-w", "-l", os.path.join(self.dir, "pg.log"), "-o",
                                 f"-k {self.dir} -p {self.port} -c listen_addresses=127.0.0.1", "start"],
                       check=True, capture_output=True, timeout=120)
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def sql(self, query: str, check: bool = True) -> list[list[str]]:
        """Rows of `query` (psql, unaligned), each a list of column texts; with `check=False` a
        failing query (a table the roll-up has not made yet) gives no rows."""
        result = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", self.url, "-c", query],
                                capture_output=True, text=True, timeout=60)
        if not check and result.returncode != 0:
            return []
        assert result.returncode == 0, result.stderr
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def stop(self):
        subprocess.run(self.run_as + [self.pg_ctl, "-D", self.data, "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def head_office():
    office = HeadOffice()
    try:
        yield office
    finally:
        office.stop()


def rollup(node_or_dir, url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    data_dir = node_or_dir if isinstance(node_or_dir, str) else node_or_dir.data_dir
    argv = [ordersync_binary(), "rollup", *args[:1], "--data-dir", data_dir, "--database-url", url, *args[1:]] \
        if args and args[0] in ("verify", "status") else \
        [ordersync_binary(), "rollup", "--data-dir", data_dir, "--database-url", url, "--json", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def events(result: subprocess.CompletedProcess, name: str) -> list[dict]:
    out = []
    for line in result.stderr.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("event") == name:
            out.append(e)
    return out


def local_journal(node) -> list[dict]:
    return read_sqlite(node.data_dir, "SELECT seq, term, op_id, origin, operation, message FROM journal ORDER BY seq")


def store_id(node) -> str:
    return node.status()["store"]


def head_journal(office: HeadOffice, store: str) -> list[dict]:
    rows = office.sql(f"SELECT seq, term, coalesce(op_id, '<null>'), origin, operation, encode(convert_to(message, 'UTF8'), 'hex') "
                      f"FROM ordersync.journal WHERE store_id = '{store}' ORDER BY seq")
    return [{"seq": int(r[0]), "term": int(r[1]), "op_id": None if r[2] == "<null>" else r[2], "origin": r[3],
             "operation": int(r[4]), "message": bytes.fromhex(r[5]).decode()} for r in rows]


def assert_equal_journals(office: HeadOffice, node, through: int | None = None):
    """Head office's rows of the node's store are its journal entry for entry (1...through):
    no gap, no duplicate, each message byte for byte."""
    local = [e for e in local_journal(node) if through is None or e["seq"] <= through]
    head = head_journal(office, store_id(node))
    assert [e["seq"] for e in head] == list(range(1, len(head) + 1)), "0 gaps, 0 duplicates"
    assert len(head) == len(local), (len(head), len(local))
    for h, l in zip(head, local):
        assert h == {"seq": l["seq"], "term": l["term"], "op_id": l["op_id"], "origin": l["origin"],
                     "operation": l["operation"], "message": l["message"].decode() if isinstance(l["message"], bytes) else l["message"]}


def stable_seq(node) -> int:
    rows = read_sqlite(node.data_dir, "SELECT value FROM metadata WHERE key = 'sync.stable_seq'")
    return int(rows[0]["value"]) if rows else 0


def last_seq(node) -> int:
    return read_sqlite(node.data_dir, "SELECT coalesce(max(seq), 0) AS s FROM journal")[0]["s"]


def test_two_shops_roll_up_into_one_head_office(make_lan, head_office):
    h1, h2, h3 = make_lan(3).hosts
    shop1 = OrderSyncNode.master(h1, store="shop1")
    shop2 = OrderSyncNode.master(h2, store="shop2", extra=FAST)
    shop1.wait_api()
    till = OrderSyncNode.slave(h3, store="shop2", pair_with=shop2, extra=FAST)
    till.wait_live()

    for i in range(6):
        shop1.create(f"Shop one {i}", note=f"n{i}")
    u = shop1.create("Changed")["uuid"]
    shop1.update(u, customer="Changed again")
    shop1.remove(shop1.create("Removed")["uuid"])
    for i in range(4):
        shop2.create(f"Shop two {i}")

    # shop1 has no other voter: every committed entry is stable.
    first = rollup(shop1, head_office.url, "--once")
    assert first.returncode == 0, first.stderr
    assert sum(e["entries"] if isinstance(e["entries"], int) else int(e["entries"]) for e in events(first, "rollup.batch_committed")) == 10
    # shop2's stable seq is what its standby holds: awaited in the master's own metadata.
    wait_until(lambda: stable_seq(shop2) == last_seq(shop2) == 4, 20, what="shop2's stable seq to reach its last entry")
    second_shop = rollup(shop2, head_office.url, "--once")
    assert second_shop.returncode == 0, second_shop.stderr

    assert_equal_journals(head_office, shop1)
    assert_equal_journals(head_office, shop2)
    orders = head_office.sql("SELECT store_id, count(*), sum(CASE WHEN removed THEN 1 ELSE 0 END) FROM ordersync.orders GROUP BY store_id ORDER BY 1")
    assert orders == [["shop1", "8", "1"], ["shop2", "4", "0"]], orders
    assert head_office.sql(f"SELECT customer_name, version FROM ordersync.orders WHERE uuid = '{u.lower()}'") == [["Changed again", "2"]]

    for shop in (shop1, shop2):
        v = rollup(shop, head_office.url, "verify", "--json")
        assert v.returncode == 0, v.stdout + v.stderr
        answer = json.loads(v.stdout)
        assert answer["equal"] is True and answer["seq"] == last_seq(shop), answer

    # Nothing new: a second --once ships nothing and exits 0.
    again = rollup(shop1, head_office.url, "--once")
    assert again.returncode == 0 and events(again, "rollup.batch_committed") == [], again.stderr
    # The standby's copy of shop2 is the same journal (in what is hashed: its own time of applying
    # each entry aside): its roll-up finds nothing to ship, and verifies.
    def hashed(rows):
        return [(r["seq"], r["term"], r["op_id"], r["operation"], (r["message"].encode() if isinstance(r["message"], str) else bytes(r["message"])).replace(b',"ackNow":true}', b"}"))
                for r in rows]
    assert hashed(local_journal(till)) == hashed(local_journal(shop2))
    wait_until(lambda: stable_seq(till) == 4, 20, what="the standby to learn the stable seq from a heartbeat")
    standby = rollup(till, head_office.url, "--once")
    assert standby.returncode == 0 and events(standby, "rollup.batch_committed") == [], standby.stderr
    v = rollup(till, head_office.url, "verify", "--json")
    assert v.returncode == 0 and json.loads(v.stdout)["equal"] is True, v.stdout + v.stderr

    status = json.loads(subprocess.run([ordersync_binary(), "rollup", "status", "--data-dir", shop1.data_dir, "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    assert status["running"] is False and status["checkpoint"]["seq"] == 10 and status["lag"]["entries"] == 0, status


def test_follow_mode_ships_a_new_order_within_seconds(make_lan, head_office):
    (h1,) = make_lan(1).hosts
    shop = OrderSyncNode.master(h1, store="shop1")
    shop.wait_api()
    shop.create("Before")
    port = free_port()
    follower = subprocess.Popen([ordersync_binary(), "rollup", "--data-dir", shop.data_dir, "--database-url", head_office.url,
                                 "--json", "--metrics-listen", f"127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: head_office.sql("SELECT seq FROM ordersync.checkpoints WHERE store_id = 'shop1'", check=False) == [["1"]], 30,
                   what="the first entry at head office")
        t0 = time.monotonic()
        uuid = shop.create("Taken just now")["uuid"]
        wait_until(lambda: head_office.sql(f"SELECT 1 FROM ordersync.orders WHERE uuid = '{uuid.lower()}'", check=False), 10, interval=0.02,
                   what="the new order at head office")
        took = time.monotonic() - t0
        print(f"FIGURE follow-mode latency order taken -> row at head office: {took:.3f} s")
        assert took < 5, took
        import urllib.request
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert "ordersync_rollup_checkpoint_seq 2" in metrics and "ordersync_rollup_up 1" in metrics, metrics
        status = json.loads(subprocess.run([ordersync_binary(), "rollup", "status", "--data-dir", shop.data_dir, "--json"],
                                           capture_output=True, text=True, check=True).stdout)
        assert status["running"] is True and status["checkpoint"]["seq"] == 2, status
    finally:
        follower.terminate()
        follower.wait(timeout=10)


def test_tampered_row_and_conflicting_row_are_caught(make_lan, head_office):
    (h1,) = make_lan(1).hosts
    shop = OrderSyncNode.master(h1, store="shop1")
    shop.wait_api()
    for i in range(5):
        shop.create(f"Order {i}")
    nobody = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    assert rollup(shop, nobody, "--once").returncode == 69
    assert rollup(shop, nobody, "verify").returncode == 69
    assert rollup(shop, head_office.url, "--once").returncode == 0

    # A report writer "fixes" a customer name in head office's journal: verify names seq 3.
    head_office.sql("UPDATE ordersync.journal SET message = replace(message, 'Order 2', 'Order X') WHERE seq = 3")
    v = rollup(shop, head_office.url, "verify", "--json")
    assert v.returncode == 1, v.stdout + v.stderr
    answer = json.loads(v.stdout)
    assert answer["equal"] is False and answer["firstDifferentSeq"] == 3, answer
    head_office.sql("UPDATE ordersync.journal SET message = replace(message, 'Order X', 'Order 2') WHERE seq = 3")
    assert rollup(shop, head_office.url, "verify").returncode == 0

    # Another entry already sits at seq 6 (a restored shop, another process): the roll-up stops
    # with an alarm, overwrites nothing, and exits 65.
    head_office.sql("INSERT INTO ordersync.journal (store_id, lineage, seq, term, origin, operation, message, recorded_at, hash, rolling) "
                    "SELECT store_id, lineage, 6, 1, 'elsewhere', 0, '{}', now(), '\\x00'::bytea, '\\x00'::bytea "
                    "FROM ordersync.checkpoints WHERE store_id = 'shop1'")
    shop.create("The sixth")
    stopped = rollup(shop, head_office.url, "--once")
    assert stopped.returncode == 65, stopped.stderr
    assert [int(e["seq"]) for e in events(stopped, "rollup.conflict")] == [6]
    assert head_office.sql("SELECT kind, seq FROM ordersync.alarms WHERE store_id = 'shop1'") == [["conflict", "6"]]
    assert head_office.sql("SELECT origin FROM ordersync.journal WHERE store_id = 'shop1' AND seq = 6") == [["elsewhere"]]
    assert head_office.sql("SELECT seq FROM ordersync.checkpoints WHERE store_id = 'shop1'") == [["5"]]
    status = json.loads(subprocess.run([ordersync_binary(), "rollup", "status", "--data-dir", shop.data_dir, "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    assert status["state"] == "conflict" and status["lastError"]["code"] == "conflict", status


def test_exit_codes_for_bad_input(tmp_path, head_office):
    bad_url = subprocess.run([ordersync_binary(), "rollup", "--data-dir", str(tmp_path), "--database-url", "postgresql://[nope", "--once"],
                             capture_output=True, text=True, timeout=30)
    assert bad_url.returncode == 78, bad_url.stderr
    not_a_store = rollup(str(tmp_path), head_office.url, "--once")
    assert not_a_store.returncode == 78, not_a_store.stderr
    unreachable = subprocess.run([ordersync_binary(), "rollup", "--data-dir", str(tmp_path), "--database-url",
                                  f"postgresql://postgres@127.0.0.1:{free_port()}/postgres", "--once"],
                                 capture_output=True, text=True, timeout=60)
    assert unreachable.returncode == 78, "the data directory is checked first: " + unreachable.stderr
    usage = subprocess.run([ordersync_binary(), "rollup", "--once", "--bogus"], capture_output=True, text=True, timeout=30)
    assert usage.returncode == 64, usage.stderr
