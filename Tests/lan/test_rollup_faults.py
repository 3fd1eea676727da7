"""The roll-up to head office's PostgreSQL under faults (issue 28), with real processes: a shop's
master and its till (`ordersync master`/`slave` on simulated hosts) take orders on the till's and
the master's local API while `ordersync rollup` follows into a PostgreSQL started by the test on a
host of its own (`postgres_lab.py`: initdb, a role per shop with row-level security, as the
setup guide shows). After each fault head office's rows equal the shop's journal (every seq once,
no gap, each entry byte for byte) and `ordersync rollup verify` exits 0:

* (a) the roll-up killed (-9) once a batch was committed but before the backlog was shipped,
  then started again;
* (b) PostgreSQL stopped with `-m immediate` while the roll-up follows, started again: the
  roll-up logs `rollup.connect_failed` and `rollup.backoff`, its status shows `lastError`
  meanwhile, and it catches up;
* (c) the WAN to head office down (packets dropped silently): `--once` exits 69 within seconds
  (the connect deadline, not the kernel's minutes), the follower's status reports the error,
  and it catches up when the WAN is back;
* (d) the WAN shaped slow (200 ms more round trip, 5 % loss, 2 Mbit/s): it catches up, and its
  lag in status and metrics comes back to 0;
* (e) two shops into one head office: each shop's role reads and writes only its own rows;
* (f) the master dies and a till is promoted (issue 26) while the roll-up follows: the roll-up
  started on the promoted till goes on from head office's checkpoint;
* (g) a row tampered with at head office: verify exits 1 naming its seq;
* (h) the schema the setup guide's SQL makes is the one the roll-up makes.

Every wait is on an event (a log line, a row, a status), never a sleep. Each prints its `FIGURE`
(`pytest -s`). Needs what Tests/lan needs, PostgreSQL 15 (`initdb`, `pg_ctl`, `psql`), iptables
and tc; under CI mode a missing one fails the test.
"""

from __future__ import annotations

import datetime
import os
import re
import time
import zoneinfo

import pytest

from failover_lab import Promotion, Writer, figure, first_accepted_write, store, wait_following
from lan_support import require
from lanharness import wait_until
from ordersync_lab import OrderSyncNode, ordersync_binary
from postgres_lab import REPO, HeadOffice, check_equals_journal, require_postgres
from rollup_lab import EXIT_DIFFERENT, EXIT_OK, EXIT_UNREACHABLE, Rollup, once, rollup_available, verify, \
    wait_status

#: Longest a `--once` may take to give up on a dead WAN (the roll-up's connect deadline is
#: seconds: issue 28 "a dead link fails in seconds, not the kernel's 15 minutes").
UNREACHABLE_BOUND = 30.0
#: Entries taken before the roll-up starts in (a): several batches of at most 500.
BACKLOG = 1500

pytestmark = pytest.mark.usefixtures("ordersync_built")


@pytest.fixture
def rollup_built(ordersync_built):
    """Fails under CI mode (skips elsewhere) while the binary lacks `ordersync rollup`, or
    PostgreSQL is missing."""
    require(rollup_available(), "this ordersync binary has no `rollup` command (issue 28's product)")
    require_postgres()


def shop_and_office(lan, store_id: str, port: int, tills: int = 1) -> tuple[OrderSyncNode, list[OrderSyncNode],
                                                                          HeadOffice, str]:
    """Head office on the LAN's last host (a role for `store_id`), the shop's master on the
    first and `tills` paired tills after it, all live. Returns (master, tills, office, url)."""
    office = HeadOffice(lan.hosts[-1]).start()
    url = office.add_shop(f"role_{store_id}", store_id)
    master, slaves = store(lan, store_id, port=port, slaves=tills)
    return master, slaves, office, url


def following(make_lan, store_id: str, port: int):
    """A shop and head office (`shop_and_office`), the roll-up following and orders being taken,
    once a first batch is committed. Returns (master, tills, office, url, rollup, writers)."""
    master, tills, office, url = shop_and_office(make_lan(3), store_id, port=port)
    rollup = Rollup(master, url)
    writers = take_orders(master, tills, pause=0.01)
    rollup.wait_event("rollup.batch_committed", timeout=120)
    return master, tills, office, url, rollup, writers


def take_orders(master: OrderSyncNode, tills: list[OrderSyncNode], pause: float = 0.0) -> list[Writer]:
    """Writers on each till's local API and the master's."""
    writers = [Writer(t, t.host.name, pause=pause) for t in tills] + [Writer(master, "api", pause=pause)]
    for writer in writers:
        writer.start()
    return writers


def stop_taking(writers: list[Writer], tills: list[OrderSyncNode]) -> list[dict]:
    """Stops the writers; waits until every till's outbox is empty (everything at the master and
    held by the tills: the stable seq can reach the master's last). Returns what was sent."""
    sent = [op for w in writers for op in w.stop()]
    for till in tills:
        till.wait_drained(timeout=60)
    assert all(op["acked"] for op in sent), [op for op in sent if not op["acked"]][:3]
    return sent


def wait_seq(node: OrderSyncNode, seq: int, timeout: float = 120) -> int:
    return wait_until(lambda: (s := node.status()["seq"]) >= seq and s, timeout, interval=0.1,
                      what=f"{node.host.name}'s journal to reach {seq}")


def caught_up(master: OrderSyncNode, office: HeadOffice, store_id: str, url: str, timeout: float = 120) -> dict:
    """Waits until head office's checkpoint is the master's last seq; then checks the rows
    against the journal and `verify`. Returns the check's figures."""
    last = master.status()["seq"]
    office.wait_checkpoint(store_id, last, timeout=timeout)
    checked = check_equals_journal(office, store_id, master.data_dir)
    code, answer = verify(master, url)
    assert code == EXIT_OK and answer and answer.get("equal") is True and answer.get("seq") == last, (code, answer)
    return checked


def test_a_rollup_killed_mid_batch_ships_every_entry_once(make_lan, rollup_built):
    lan = make_lan(3)
    master, tills, office, url = shop_and_office(lan, "shopA", port=17281)
    writers = take_orders(master, tills)
    wait_seq(master, BACKLOG, timeout=300)
    # A WAN of 40 ms more round trip: the backlog takes several batches, each a few round trips.
    relay_port = office.shape(master.host, delay_ms=40, loss=0.0, rate="100mbit")
    rollup = Rollup(master, office.url("role_shopA", port=relay_port))
    first = rollup.wait_event("rollup.batch_committed", timeout=120)
    rollup.kill()
    at_kill, last = office.checkpoint_seq("shopA"), master.status()["seq"]
    assert 0 < at_kill < last, f"the kill came after the backlog was shipped ({at_kill} of {last}): make it larger"
    # The batch in flight at the kill left nothing: no row beyond the checkpoint.
    rows_at_kill = max(int(row["seq"]) for row in office.journal("shopA"))
    assert rows_at_kill == at_kill, f"head office holds rows up to {rows_at_kill}, its checkpoint is {at_kill}"
    figure(backlog=last, checkpoint_at_kill=at_kill, first_batch_entries=first.get("entries"),
           first_batch_ms=first.get("ms"))
    rollup = Rollup(master, url)
    stop_taking(writers, tills)
    checked = caught_up(master, office, "shopA", url)
    started = rollup.events("rollup.started")
    assert started, rollup.log_lines()[-10:]
    figure(rows=checked["rows"], batches_after_restart=len(rollup.events("rollup.batch_committed")))
    rollup.stop()


def test_b_postgres_stopped_immediately_and_restarted_the_rollup_reconnects_and_catches_up(make_lan, rollup_built):
    master, tills, office, url, rollup, writers = following(make_lan, "shopB", port=17282)
    office.stop(immediate=True)
    stopped = time.monotonic()
    rollup.wait_event("rollup.connect_failed", timeout=60)
    rollup.wait_event("rollup.backoff", timeout=60)
    wait_status(master, lambda s: s.get("lastError") is not None and s.get("state") == "backoff", timeout=60,
                what="the roll-up's status to show its last error, backing off")
    wait_until(lambda: rollup.metrics().get("ordersync_rollup_up") == 0, 30, what="ordersync_rollup_up 0")
    wait_until(lambda: rollup.metrics().get('ordersync_rollup_state{state="backoff"}') == 1, 30,
               what='ordersync_rollup_state{state="backoff"} 1 (the alert rules read it)')
    committed_before = len(rollup.events("rollup.batch_committed"))
    office.start()
    restarted = time.monotonic()
    rollup.wait_event("rollup.batch_committed", count=committed_before + 1, timeout=120)
    back_s = time.monotonic() - restarted
    stop_taking(writers, tills)
    checked = caught_up(master, office, "shopB", url)
    # Caught up: the status says healthy (no current error); the outage is history, over by the
    # time of the first checkpoint committed since.
    final = wait_status(master, lambda s: (s.get("lag") or {}).get("entries") == 0 and s.get("state") == "idle"
                        and s.get("lastError") is None and s.get("previousError") is not None,
                        timeout=60, what="the roll-up's status to be caught up, its error behind it")
    previous = final["previousError"]
    assert previous["code"] in ("unreachable", "query"), final
    assert previous["at"] <= previous["clearedAt"], final
    text = master.host.run([ordersync_binary(), "rollup", "status", "--data-dir", master.data_dir], timeout=30).stdout
    assert "previous error (over)" in text and "\nerror:" not in text, text
    figure(down_s=restarted - stopped, first_batch_after_restart_s=back_s, backoffs=len(rollup.events("rollup.backoff")),
           rows=checked["rows"],
           state=final["state"])
    rollup.stop()


def test_c_wan_down_once_gives_up_in_seconds_and_the_follower_catches_up(make_lan, rollup_built):
    master, tills, office, url, rollup, writers = following(make_lan, "shopC", port=17283)
    office.wan_down(master.host)
    down = time.monotonic()
    # The follower, its connection established when the WAN died, finds out by its deadlines.
    failing = wait_status(master, lambda s: s.get("lastError") is not None and s.get("pid") == rollup.process.pid,
                          timeout=UNREACHABLE_BOUND + 30, what="the follower's status to report the dead WAN")
    reported_s = time.monotonic() - down
    rollup.stop()
    code, answer, took = once(master, url, timeout=600)
    assert code == EXIT_UNREACHABLE, (code, answer)
    assert took < UNREACHABLE_BOUND, f"--once took {took:.1f}s to give up on a dead WAN (bound {UNREACHABLE_BOUND}s)"
    # A follower started while the WAN is down backs off until it is back.
    rollup = Rollup(master, url)
    rollup.wait_event("rollup.connect_failed", timeout=UNREACHABLE_BOUND + 30)
    office.wan_up(master.host)
    up = time.monotonic()
    committed = len(rollup.events("rollup.batch_committed"))
    rollup.wait_event("rollup.batch_committed", count=committed + 1, timeout=120)
    back_s = time.monotonic() - up
    stop_taking(writers, tills)
    checked = caught_up(master, office, "shopC", url)
    figure(once_gave_up_s=took, follower_reported_s=reported_s, first_batch_after_link_up_s=back_s,
           rows=checked["rows"], error=str(failing["lastError"].get("code")))
    rollup.stop()


def test_d_a_slow_lossy_wan_catches_up_and_the_lag_returns_to_zero(make_lan, rollup_built):
    lan = make_lan(3)
    master, tills, office, url = shop_and_office(lan, "shopD", port=17284)
    relay_port = office.shape(master.host, delay_ms=200, loss=0.05, rate="2mbit")
    shaped_url = office.url("role_shopD", port=relay_port)
    rollup = Rollup(master, shaped_url)
    writers = take_orders(master, tills, pause=0.01)
    wait_seq(master, 400)
    stop_taking(writers, tills)
    last = master.status()["seq"]
    started = time.monotonic()
    final = wait_status(master, lambda s: (s.get("checkpoint") or {}).get("seq") == last
                        and (s.get("lag") or {}).get("entries") == 0,
                        timeout=180, what=f"the roll-up's checkpoint at {last} with no lag")
    caught_s = time.monotonic() - started
    metrics = wait_until(lambda: (m := rollup.metrics()).get("ordersync_rollup_lag_entries") == 0 and m, 30,
                         what="ordersync_rollup_lag_entries 0")
    assert metrics.get("ordersync_rollup_checkpoint_seq") == last, metrics
    assert metrics.get("ordersync_rollup_up") == 1, metrics
    checked = caught_up(master, office, "shopD", url)
    figure(entries=last, caught_up_after_writes_s=caught_s, lag_seconds=final["lag"].get("seconds"), rows=checked["rows"])
    rollup.stop()


def test_e_two_shops_one_head_office_each_role_sees_and_writes_only_its_rows(make_lan, rollup_built):
    lan = make_lan(4)
    h1, h2, h3, office_host = lan.hosts
    office = HeadOffice(office_host).start()
    urls = {"shopE1": office.add_shop("role_shopE1", "shopE1"), "shopE2": office.add_shop("role_shopE2", "shopE2")}
    master1 = OrderSyncNode.master(h1, store="shopE1", name="h1", port=17285)
    till1 = OrderSyncNode.slave(h2, store="shopE1", pair_with=master1, pair_name="h2")
    till1.wait_live()
    master2 = OrderSyncNode.master(h3, store="shopE2", name="h3", port=17285)
    for master, tills in ((master1, [till1]), (master2, [])):
        writers = take_orders(master, tills)
        wait_seq(master, 60)
        stop_taking(writers, tills)
    for store_id, master in (("shopE1", master1), ("shopE2", master2)):
        code, answer, took = once(master, urls[store_id])
        assert code == EXIT_OK, (store_id, code, answer)
        checked = check_equals_journal(office, store_id, master.data_dir)
        code, answer = verify(master, urls[store_id])
        assert code == EXIT_OK and answer["equal"] is True, (store_id, code, answer)
        figure(store=store_id, rows=checked["rows"], once_s=took)
    others = {"role_shopE1": ("shopE2", h1), "role_shopE2": ("shopE1", h3)}
    for role, (other, host) in others.items():
        own = role.removeprefix("role_")
        for table in ("journal", "orders", "checkpoints"):
            seen = office.rows_as(role, host, f"SELECT store_id, count(*) AS n FROM ordersync.{table} GROUP BY store_id")
            assert seen.stdout.splitlines()[1:] and all(line.startswith(f"{own},") for line in seen.stdout.splitlines()[1:]), \
                (role, table, seen.stdout)
        before = office.journal(other)
        forged = office.rows_as(role, host, "INSERT INTO ordersync.journal (store_id, lineage, seq, term, origin, operation, "
                                f"message, recorded_at, hash, rolling) VALUES ('{other}', 'x', 999999, 1, 'forged', 0, "
                                "'{}', now(), '\\x00', '\\x00')", check=False)
        assert forged.returncode != 0 and "row-level security" in forged.stderr, forged.stderr
        changed = office.rows_as(role, host, f"UPDATE ordersync.orders SET customer_name = 'forged' WHERE store_id = '{other}'")
        assert office.journal(other) == before, "a shop's role changed another shop's rows"
        assert all(o["customer_name"] != "forged" for o in office.orders(other)), changed.stdout
        erased = office.rows_as(role, host, f"DELETE FROM ordersync.journal WHERE store_id = '{own}'", check=False)
        assert erased.returncode != 0 and "permission denied" in erased.stderr, erased.stderr
    for store_id, master in (("shopE1", master1), ("shopE2", master2)):
        assert verify(master, urls[store_id])[0] == EXIT_OK, store_id
    # The guide's queries for report writers, as ordersync_reader: every shop's orders.
    today_sql, by_status_sql = guide_queries()[:2]
    by_status = office.psql("SET ROLE ordersync_reader; " + by_status_sql)
    today = {row["store_id"]: int(row["orders"]) for row in office.psql("SET ROLE ordersync_reader; " + today_sql)}
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    for store_id, master in (("shopE1", master1), ("shopE2", master2)):
        orders = master.orders()
        counted = sum(int(row["orders"]) for row in by_status if row["store_id"] == store_id)
        assert counted == len(orders), (store_id, counted, len(orders), by_status)
        taken_today = [o for o in orders if datetime.datetime.fromisoformat(o["created"]).astimezone(paris).date()
                       == datetime.datetime.now(paris).date()]
        assert today.get(store_id, 0) == len(taken_today), (store_id, today, len(taken_today))


def guide_queries() -> list[str]:
    """The SQL examples of Docs/OPERATIONS.md's "Tables for report writers", in order."""
    text = open(os.path.join(REPO, "Docs", "OPERATIONS.md")).read()
    section = text.split("\n### Tables for report writers", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


def test_f_a_promotion_mid_rollup_continues_from_head_offices_checkpoint(make_lan, rollup_built):
    lan = make_lan(4)
    master, tills, office, url = shop_and_office(lan, "shopF", port=17286, tills=2)
    rollup = Rollup(master, url)
    writers = [Writer(t, t.host.name, pause=0.01) for t in tills]
    for writer in writers:
        writer.start()
    rollup.wait_event("rollup.batch_committed", timeout=120)
    # The master's board dies: its roll-up, its avahi-daemon and the master itself, no goodbye.
    rollup.kill()
    master.host.kill_avahi()
    master.kill()
    shipped = office.checkpoint_seq("shopF")
    chosen, other = tills
    promotion = Promotion(chosen)
    promote_s, first = first_accepted_write(promotion, "promoted")
    report = promotion.promoted()
    wait_following([other], chosen.node_id(), term=report["term"], since=promotion.started)
    assert shipped <= report["seq"], f"head office holds {shipped}, beyond what the promoted till holds ({report})"
    rollup = Rollup(chosen, url)
    batch = rollup.wait_event("rollup.batch_committed", timeout=120)
    # It goes on where head office's checkpoint stands: the next seq, nothing skipped or repeated.
    assert int(batch["first"]) == shipped + 1, (shipped, batch)
    stop_taking(writers, [other])
    checked = caught_up(chosen, office, "shopF", url)
    figure(shipped_before=shipped, promoted_seq=report["seq"], promote_s=promote_s, rows=checked["rows"],
           first_batch_after=f"{batch['first']}-{batch['last']}")
    rollup.stop()


def test_g_a_tampered_head_office_row_is_named_by_verify(make_lan, rollup_built):
    lan = make_lan(3)
    master, tills, office, url = shop_and_office(lan, "shopG", port=17287)
    writers = take_orders(master, tills)
    wait_seq(master, 40)
    stop_taking(writers, tills)
    code, answer, _ = once(master, url)
    assert code == EXIT_OK, (code, answer)
    assert verify(master, url)[0] == EXIT_OK
    rows = office.journal("shopG")
    seq = int(rows[len(rows) // 2]["seq"])
    office.psql(f"UPDATE ordersync.journal SET message = replace(message, '\"', ' \"') "
                f"WHERE store_id = 'shopG' AND seq = {seq}")
    code, answer = verify(master, url)
    assert code == EXIT_DIFFERENT and answer and answer.get("equal") is False, (code, answer)
    assert answer.get("firstDifferentSeq") == seq, (seq, answer)
    figure(tampered_seq=seq, reason=str(answer.get("reason")))


def test_h_the_guides_schema_is_the_one_the_rollup_makes(make_lan, rollup_built):
    lan = make_lan(2)
    master = OrderSyncNode.master(lan.hosts[0], store="shopH", name="h1", port=17288)
    master.wait_api()
    master.create(customer="Kevin", table="T4")
    office = HeadOffice(lan.hosts[1]).start()
    # The roll-up makes the schema itself in an empty database, connecting as a role that may.
    office.psql("CREATE DATABASE fresh", database="postgres")
    office.psql("ALTER ROLE postgres PASSWORD 'head-office'", database="postgres")
    fresh = f"postgresql://postgres:head-office@{office.host.address}:{office.port}/fresh"
    code, answer, _ = once(master, fresh)
    assert code == EXIT_OK, (code, answer)
    query = ("SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
             "WHERE table_schema = 'ordersync' AND table_name <> 'shops' ORDER BY table_name, column_name")
    keys = ("SELECT tc.table_name, kcu.column_name, kcu.ordinal_position FROM information_schema.table_constraints tc "
            "JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name) "
            "WHERE tc.table_schema = 'ordersync' AND tc.constraint_type = 'PRIMARY KEY' AND tc.table_name <> 'shops' "
            "ORDER BY 1, 3")
    for sql in (query, keys, "SELECT version FROM ordersync.schema_version"):
        guide, rollups = office.psql(sql), office.psql(sql, database="fresh")
        assert guide == rollups, (sql, [r for r in guide if r not in rollups], [r for r in rollups if r not in guide])
