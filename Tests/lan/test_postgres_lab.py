"""The head office lab itself (`postgres_lab.py`), without the roll-up: what the roll-up fault
tests rely on must do what they think it does.

* the setup guide's SQL gives each shop's role its own rows only: it reads and inserts its
  store's rows, gets nothing of another shop's, is refused another store's rows by row-level
  security, cannot update or delete a journal row nor create a table; the server stopped with
  `-m immediate` comes back with every committed row;
* `check_equals_journal` passes on head office rows copied from a master's journal and fails on
  each doctored copy: a row missing (a gap), a message changed, a row the node does not hold, the
  checkpoint behind;
* the WAN: dropped, a connection from the shop times out (no refusal) while another shop still
  gets in; shaped, a round trip through the relay takes at least the added delay; both undone.
"""

from __future__ import annotations

import time

import pytest

from lanharness import LanError
from ordersync_lab import OrderSyncNode
from postgres_lab import HeadOffice, _quote, check_equals_journal, local_journal, require_postgres

pytestmark = pytest.mark.usefixtures("ordersync_built")


@pytest.fixture
def postgres_ready(ordersync_built):
    require_postgres()


def _literal(text: str | None) -> str:
    return "NULL" if text is None else "'" + _quote(text) + "'"


def copy_journal(office: HeadOffice, store: str, data_dir: str) -> int:
    """Copies the node's journal into head office as a roll-up would (placeholder hashes), with
    the checkpoint at its last seq; returns that seq."""
    entries = local_journal(data_dir)
    values = ", ".join(
        f"('{store}', 'L1', {e['seq']}, {e['term']}, {_literal(e['op_id'])}, "
        f"'{_quote(e['origin'])}', {e['operation']}, '{_quote(e['message'])}', now(), '\\x00', '\\x00')" for e in entries)
    office.psql("INSERT INTO ordersync.journal (store_id, lineage, seq, term, op_id, origin, operation, message, "
                f"recorded_at, hash, rolling) VALUES {values}")
    last = entries[-1]["seq"]
    office.psql(f"INSERT INTO ordersync.checkpoints (store_id, lineage, seq, rolling) VALUES ('{store}', 'L1', {last}, '\\x00')")
    return last


def two_shops(make_lan) -> tuple:
    """Two shops' hosts and head office on a third, a role for each shop (shopA, shopB)."""
    shop_a, shop_b, office_host = make_lan(3).hosts
    office = HeadOffice(office_host).start()
    office.add_shop("role_a", "shopA")
    office.add_shop("role_b", "shopB")
    return shop_a, shop_b, office


def test_each_shops_role_sees_and_writes_only_its_rows_and_survives_an_immediate_stop(make_lan, postgres_ready):
    shop_a, shop_b, office = two_shops(make_lan)
    insert = ("INSERT INTO ordersync.checkpoints (store_id, lineage, seq, rolling) VALUES ('{store}', 'L', {seq}, '\\x00')")
    office.rows_as("role_a", shop_a, insert.format(store="shopA", seq=5))
    office.rows_as("role_b", shop_b, insert.format(store="shopB", seq=7))
    refused = office.rows_as("role_a", shop_a, insert.format(store="shopB", seq=9), check=False)
    assert refused.returncode != 0 and "row-level security" in refused.stderr, refused.stderr
    assert office.rows_as("role_a", shop_a, "SELECT store_id, seq FROM ordersync.checkpoints").stdout.split() == \
        ["store_id,seq", "shopA,5"]
    office.rows_as("role_a", shop_a, "UPDATE ordersync.checkpoints SET seq = 99 WHERE store_id = 'shopB'")
    assert office.checkpoint_seq("shopB") == 7, "role_a changed shopB's checkpoint"
    for sql, why in (("DELETE FROM ordersync.journal", "permission denied"),
                     ("UPDATE ordersync.journal SET seq = 1", "permission denied"),
                     ("CREATE TABLE ordersync.mine (a int)", "permission denied")):
        result = office.rows_as("role_a", shop_a, sql, check=False)
        assert result.returncode != 0 and why in result.stderr, (sql, result.stderr)
    office.stop(immediate=True)
    assert not office.running()
    office.start()
    assert [(c["store_id"], c["seq"]) for c in office.checkpoints()] == [("shopA", "5"), ("shopB", "7")]


def test_the_journal_check_passes_on_a_copy_and_fails_on_each_doctored_one(make_lan, postgres_ready):
    lan = make_lan(2)
    master = OrderSyncNode.master(lan.hosts[0], store="shopL", name="h1", port=17289)
    master.wait_api()
    for n in range(6):
        master.create(customer=f"Kevin 'K' {n}", table=f"T{n}", note='say "hi"')
    office = HeadOffice(lan.hosts[1]).start()
    last = copy_journal(office, "shopL", master.data_dir)
    assert check_equals_journal(office, "shopL", master.data_dir) == {"rows": 6, "lineage": "L1", "seq": last}
    doctored = [
        ("DELETE FROM ordersync.journal WHERE seq = 3", "lacks seqs [3]"),
        ("UPDATE ordersync.journal SET message = message || ' ' WHERE seq = 4", "seq 4 differs"),
        ("INSERT INTO ordersync.journal SELECT store_id, lineage, 99, term, NULL, origin, operation, message, "
         "recorded_at, hash, rolling FROM ordersync.journal WHERE seq = 1", "has [99]"),
        ("UPDATE ordersync.checkpoints SET seq = seq - 1", "the checkpoint is"),
    ]
    for sql, complaint in doctored:
        office.psql("BEGIN; " + sql + "; COMMIT")
        with pytest.raises(AssertionError, match=complaint.replace("[", r"\[").replace("]", r"\]")):
            check_equals_journal(office, "shopL", master.data_dir)
        office.psql("TRUNCATE ordersync.journal, ordersync.checkpoints")
        copy_journal(office, "shopL", master.data_dir)
    check_equals_journal(office, "shopL", master.data_dir)


def test_the_wan_dropped_and_shaped(make_lan, postgres_ready):
    shop_a, shop_b, office = two_shops(make_lan)
    office.wan_down(shop_a)
    started = time.monotonic()
    dead = shop_a.run(["psql", office.url("role_a", connect_timeout="2"), "-c", "SELECT 1"], check=False, timeout=60)
    assert dead.returncode != 0 and "timeout expired" in dead.stderr, dead.stderr
    assert time.monotonic() - started >= 1.5, "the connection was refused, not dropped silently"
    office.rows_as("role_b", shop_b, "SELECT 1")
    office.wan_up(shop_a)
    office.rows_as("role_a", shop_a, "SELECT 1")

    port = office.shape(shop_a, delay_ms=300, loss=0.0)

    def connect_and_query(url: str) -> float:
        # At least 4 round trips: startup, two SCRAM exchanges, the query.
        started = time.monotonic()
        shop_a.run(["psql", url, "-c", "SELECT 1"], timeout=120)
        return time.monotonic() - started
    # The least of three tries: psql's start and the server's fork vary with the machine's load by
    # more than a second on two busy cores, the relay's delay is there every time.
    def least(url: str) -> float:
        return min(connect_and_query(url) for _ in range(3))
    fast = least(office.url("role_a"))
    slow = least(office.url("role_a", port=port))
    assert slow - fast >= 4 * 0.3 * 0.9, f"the shaped line added {slow - fast:.2f}s to a connection and a query"
    with pytest.raises(LanError, match="shaped already"):
        office.shape(shop_a)
    office.unshape(shop_a)
    unshaped = least(office.url("role_a", port=port))
    assert unshaped < slow - 4 * 0.3 * 0.5, f"the relay still delays after unshape ({unshaped:.2f}s against {slow:.2f}s shaped)"
