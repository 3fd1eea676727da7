"""Issue 23, item 1: a StorePOS app's connect sequence, recorded from a real master, replayed
into the app's model (`storepos_app.py`: `OrderService` on a `DispatchQueueModel`) under
hundreds of seeded schedules of the app's concurrent queue.

The app handles each order it receives as a task of its own on a concurrent queue
(OrderService.m lines 45, 61, 93, 130: `dispatch_promise`; line 194: one promise per order of a
Create); a task may be overtaken by the tasks submitted shortly after it. A Create of a uuid the
app's Realm still holds crashes it (DBService.m line 90). For stores of 1, 3, 50, 150 and 450
orders, with and without removals in the journal, an app that held a stale copy of every order,
every removed order and two orders of its own must end, in every schedule, with no crash, each
of the master's orders once (as the master has it, the changes made while the sequence went out
included), its own two orders, and a Realm that matches its screen.

The same recordings without the fences (the sequence before this change) crash or lose rows in
some schedules: the model can tell.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import time
import uuid as uuidlib

import pytest

from lanharness import PYTHON
from ordersync_lab import OrderSyncNode
from storepos_app import AppCrashed, DispatchQueueModel, OrderService, PersistedStore, order_from_json
from test_hostile_lan import figure
from test_storepos_app import post_orders, require_python_peers

# Orders, and the removals in the journal of the second recording (the first has none).
STORES = [(1, 2), (3, 2), (50, 10), (150, 30), (450, 90)]
# Schedules per recording: at least 200 for every store size, with and without removals.
SCHEDULES = {1: 250, 3: 250, 50: 200, 150: 200, 450: 200}
# How many places a step of the app's queue may be overtaken by: up to 64, the worker threads
# GCD gives an app ("Dispatch Thread Hard Limit Reached: 64"), Docs/PROTOCOL.md 4.2.1.
WINDOWS = (0, 1, 2, 4, 8, 16, 32, 64)
UTC = dt.timezone.utc

RECORDER = r"""
import asyncio, json, sys
from websockets.asyncio.client import connect
async def main(url, until):
    async with connect(url, compression=None, max_size=None, ping_interval=None) as ws:
        while True:
            text = await asyncio.wait_for(ws.recv(), 30)
            print(text, flush=True)
            message = json.loads(text)
            if "snapshot" not in message and any(o.get("uuid") == until for o in message.get("orders", [])):
                return
asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def new_uuid() -> str:
    return str(uuidlib.uuid4()).upper()


def order(uuid: str, name: str) -> dict:
    return {"uuid": uuid, "customerName": name, "shippingMethod": "DHL", "tableName": "T",
            "tableSize": 2, "created": "2026-11-27T09:00:00+0000"}


def connect_and_record(master: OrderSyncNode, host_app, removed: list[dict]) -> dict:
    """The messages a StorePOS app gets when it connects, with an Update, a Remove and a Create
    made while they go out; what the app held (a stale copy of every order, and `removed`)."""
    kept = master.orders()
    changed, gone, late = kept[0]["uuid"], kept[-1]["uuid"], order(new_uuid(), "late")
    port = int(master.events("node.started")[-1]["port"])
    recorder = host_app.popen([PYTHON, "-c", RECORDER, f"ws://{master.host.address}:{port}/device",
                               late["uuid"]], stdout=subprocess.PIPE, text=True)
    messages = [recorder.stdout.readline()]
    assert messages[0], "the master sent nothing"
    # Made while the sequence goes out: held, and sent after it.
    started = time.monotonic()
    for operation, member in ((1, {"uuid": changed, "customerName": "changed meanwhile"}),
                              (2, {"uuid": gone}), (0, late)):
        status, answer = master.operation(operation, member, str(uuidlib.uuid4()))
        assert status == 200 and not answer.get("errors"), answer
    assert time.monotonic() - started < 1.5, "the changes were meant to be made while the sequence went out"
    messages += [line for line in recorder.stdout.read().splitlines() if line]
    assert recorder.wait(timeout=30) == 0
    assert json.loads(messages[-1])["orders"][0]["uuid"] == late["uuid"]
    return {"messages": messages, "final": master.orders(), "old": kept, "removed": removed,
            "gone": next(o for o in kept if o["uuid"] == gone)}


def record(host_master, host_app, n: int, removals: int) -> list[tuple[int, dict]]:
    """On a master of `n` orders, the connect sequence without removals in the journal, then
    (after `removals` more orders were created and removed) with them."""
    master = OrderSyncNode.master(host_master, store="shop1", insecure_storepos=True,
                                  data_dir=os.path.join(host_master.dir, f"model-{n}"))
    try:
        master.wait_api()
        post_orders(master, [order(new_uuid(), f"c{i}") for i in range(n)])
        first = connect_and_record(master, host_app, [])
        removed = [order(new_uuid(), f"r{i}") for i in range(removals)]
        post_orders(master, removed)
        status, answer = master.operation(2, [{"uuid": o["uuid"]} for o in removed], str(uuidlib.uuid4()))
        assert status == 200 and not answer.get("errors"), answer
        second = connect_and_record(master, host_app, [first["gone"]] + removed)
    finally:
        master.stop()
    return [(0, first), (1 + removals, second)]


def shown_fields(order: dict) -> tuple:
    """What the app's screen shows of an order (OrderListTableViewCell.m), and its uuid."""
    return tuple(order.get(key) for key in ("uuid", "customerName", "shippingMethod", "tableName", "tableSize"))


class ReplayedService(OrderService):
    """The app's order service without the count of doubled rows it ever showed (a scan of the
    list at each append, which a replay does not read: it checks the rows at the end)."""

    def note_duplicates(self, added=None) -> None:
        pass


def replay(recording: dict, seed: int, fenced: bool = True) -> str | None:
    """One schedule of the app's queue: what went wrong (None: nothing)."""
    rng = random.Random(seed)
    window = WINDOWS[seed % len(WINDOWS)]
    store = PersistedStore(None, UTC)
    own = [order(new_uuid(), "own 1"), order(new_uuid(), "own 2")]
    # The app held a stale copy of every order, every order removed since, and two of its own.
    stale = [dict(o, customerName="stale") for o in recording["old"]]
    store.rows = [order_from_json(o, UTC) for o in stale + recording["removed"] + own]
    service = ReplayedService(store, UTC, DispatchQueueModel(window, rng))
    service.load()
    try:
        for text in recording["messages"]:
            if not fenced and json.loads(text).get("orders") == []:
                continue
            service.receive(text)
            # Sometimes the app keeps up, sometimes the messages pile up on its queue.
            if rng.random() < 0.5:
                service.queue.run(keep=window)
        service.queue.run()
    except AppCrashed as crash:
        return f"crashed: {crash}"
    expected = sorted(map(shown_fields, recording["final"] + own))
    shown = sorted(map(shown_fields, service.orders))
    stored = sorted(map(shown_fields, store.rows))
    if shown != expected:
        return f"screen: {len(shown)} rows for {len(expected)} orders"
    if stored != expected:
        return f"store: {len(stored)} rows for {len(expected)} orders"
    return None


def test_connect_sequence_survives_the_apps_concurrent_queue(lan2):
    require_python_peers()
    h1, h2 = lan2.hosts
    total_schedules, unfenced_failures, unfenced_runs = 0, 0, 0
    recordings = [(n, removals, recording) for n, r in STORES for removals, recording in record(h1, h2, n, r)]
    for n, removals, recording in recordings:
        fences = sum(1 for m in map(json.loads, recording["messages"]) if m.get("orders") == [] and "snapshot" in m)
        assert fences == 512, f"{n}+{removals}: {fences} empty Removes in the sequence"
        started = time.monotonic()
        failures = {}
        for seed in range(SCHEDULES[n]):
            outcome = replay(recording, seed)
            if outcome:
                failures[seed] = outcome
        total_schedules += SCHEDULES[n]
        figure(store_orders=n, removals=removals, messages=len(recording["messages"]),
               schedules=SCHEDULES[n], failures=len(failures),
               replay_s=round(time.monotonic() - started, 2))
        assert not failures, f"{n} orders, {removals} removals: {len(failures)} schedules failed, e.g. " \
            f"{list(failures.items())[:3]} (seed: window WINDOWS[seed % {len(WINDOWS)}])"
        if n <= 3:
            # The control: the same sequence without its fences.
            for seed in range(SCHEDULES[n]):
                if seed % len(WINDOWS) == 0:
                    continue  # in order: nothing to show
                unfenced_runs += 1
                unfenced_failures += replay(recording, seed, fenced=False) is not None
    figure(schedules_fenced=total_schedules, schedules_unfenced=unfenced_runs,
           unfenced_failures=unfenced_failures)
    assert unfenced_failures > 0, "without its fences the sequence never failed: the model cannot tell"
