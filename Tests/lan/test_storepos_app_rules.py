"""The StorePOS app emulation (`storepos_app.py`) follows the app's rules, one rule a test: each
test feeds `OrderService` (on a `DispatchQueueModel`) the messages a master would send and checks
the one rule its docstring names, with the app's file and line it comes from (as the module
docstring of `storepos_app.py` gives them). Pure Python, no processes, no LAN."""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest

from storepos_app import CREATE, REMOVE, UPDATE, AppCrashed, DispatchQueueModel, OrderService, PersistedStore

UTC = dt.timezone.utc
A, B, C = ("9437C8F5-D742-46CB-9847-737C5809392C", "0B1F4C2E-5D6A-4E7B-8C9D-0A1B2C3D4E5F",
           "5E2D1C0B-4A39-4827-8615-F4E3D2C1B0A9")


def message(operation: int, *orders: dict) -> str:
    return json.dumps({"operation": operation, "orders": list(orders)})


def app(window: int = 0, seed: int = 0, stored: tuple[dict, ...] = ()) -> OrderService:
    """An app whose store holds `stored` (loaded into its list at start, as `AppDelegate.m`
    does), its queue overtaking within `window` steps in the schedule `seed`."""
    store = PersistedStore(None, UTC)
    service = OrderService(store, UTC, DispatchQueueModel(window, random.Random(seed)))
    for order in stored:
        store.add(service_order(order))
    service.load()
    return service


def service_order(fields: dict) -> dict:
    """An Order as the app holds it (every known field present)."""
    order = {"uuid": None, "customerName": None, "shippingMethod": None, "tableName": None, "tableSize": 0,
             "created": None}
    order.update(fields)
    return order


def receive(service: OrderService, text: str) -> None:
    service.receive(text)
    service.queue.run()


def screen(service: OrderService) -> list[tuple]:
    return [(row["uuid"], row.get("customerName")) for row in service.rows()]


def stored(service: OrderService) -> list[tuple]:
    return [(row["uuid"], row.get("customerName")) for row in service.store.all()]


def test_a_remove_takes_the_first_copy_of_a_doubled_row():
    """`removeOrdersByUUIDs:byReceivingMessage:YES`, OrderService.m lines 98-105: the first element
    with each named uuid is removed (`indexOfOrderByUUID:`, lines 162-172, returns the first), each
    index once; a second copy of the same uuid stays on the screen."""
    service = app()
    service.orders = [service_order({"uuid": A, "customerName": "first"}),
                      service_order({"uuid": B, "customerName": "other"}),
                      service_order({"uuid": A, "customerName": "second"})]
    receive(service, message(REMOVE, {"uuid": A}))
    assert screen(service) == [(B, "other"), (A, "second")]
    # Naming the uuid twice in one Remove still takes one element: each index once.
    receive(service, message(REMOVE, {"uuid": B}, {"uuid": B}))
    assert screen(service) == [(A, "second")]


def test_a_remove_naming_more_uuids_than_the_list_holds_does_nothing():
    """`removeOrdersByUUIDs:byReceivingMessage:YES`, OrderService.m line 95: when the list holds
    fewer elements than the message names uuids, nothing at all happens, not even to the uuids
    the list holds; with as many elements as uuids the found ones go, from the list and from the
    store (lines 114-117)."""
    service = app(stored=({"uuid": A, "customerName": "Ann"},))
    receive(service, message(REMOVE, {"uuid": A}, {"uuid": B}))
    assert screen(service) == [(A, "Ann")]
    assert stored(service) == [(A, "Ann")]
    service.orders.append(service_order({"uuid": C, "customerName": "Cy"}))
    receive(service, message(REMOVE, {"uuid": A}, {"uuid": B}))
    assert screen(service) == [(C, "Cy")]
    assert stored(service) == []


def test_uuids_are_compared_exactly_case_included():
    """`indexOfOrderByUUID:`, OrderService.m line 166 (`isEqualToString:`): a uuid in another case
    is another order. An Update of it is dropped (its promise cancelled, line 139), a Remove of it
    removes nothing; a Create of it is a second row (appended without looking, line 47)."""
    service = app(stored=({"uuid": A, "customerName": "Ann"},))
    lower = A.lower()
    receive(service, message(UPDATE, {"uuid": lower, "customerName": "changed"}))
    receive(service, message(REMOVE, {"uuid": lower}))
    assert screen(service) == [(A, "Ann")]
    assert stored(service) == [(A, "Ann")]
    receive(service, message(CREATE, {"uuid": lower, "customerName": "lower"}))
    assert screen(service) == [(A, "Ann"), (lower, "lower")]
    receive(service, message(UPDATE, {"uuid": A, "customerName": "exact"}))
    assert screen(service) == [(A, "exact"), (lower, "lower")]


def test_a_received_create_of_a_stored_uuid_crashes_the_app():
    """`addOrder:byReceivingMessage:YES`, OrderService.m lines 47 and 50, DBService.m line 90
    (`createInRealm:withValue:`): the order is appended to the list first, then inserted in
    Realm, whose primary key is `uuid` (OrderStore.m lines 28-30); a stored uuid raises an
    RLMException that PromiseKit 3.0.0 does not catch: the app crashes, the doubled row on its
    screen. A uuid only on the screen (not stored) is no crash."""
    service = app(stored=({"uuid": A, "customerName": "Ann"},))
    service.receive(message(CREATE, {"uuid": A, "customerName": "again"}))
    with pytest.raises(AppCrashed, match="primary key"):
        service.queue.run()
    assert screen(service) == [(A, "Ann"), (A, "again")]
    assert stored(service) == [(A, "Ann")]
    # The same Create of a uuid the store does not hold: a second row, no crash.
    service = app()
    service.orders.append(service_order({"uuid": B, "customerName": "screen only"}))
    receive(service, message(CREATE, {"uuid": B, "customerName": "received"}))
    assert screen(service) == [(B, "screen only"), (B, "received")]


def test_per_order_promises_are_reordered_only_within_the_queue_window():
    """`didReceiveMessage:`, OrderService.m lines 187-215: one promise per order of a Create (line
    194) or an Update (line 200), one for all the uuids of a Remove (line 208), each on the global
    concurrent queue (`dispatch_promise`, lines 45, 61, 93, 130), whose semaphore (line 46)
    serialises the list but not the order. A step may be overtaken by the steps submitted fewer
    than `window` places after it, never by later ones; window 0 keeps the messages' order. An
    Update that overtakes its order's Create finds nothing and is dropped (line 139)."""
    window = 4
    orders = [{"uuid": f"{i:08X}-0000-4000-8000-000000000000", "customerName": f"o{i}"} for i in range(24)]
    text = message(CREATE, *orders)
    in_order = [(o["uuid"], o["customerName"]) for o in orders]
    reordered = 0
    for seed in range(50):
        service = app(window=0, seed=seed)
        receive(service, text)
        assert screen(service) == in_order
        service = app(window=window, seed=seed)
        receive(service, text)
        shown = [uuid for uuid, _ in screen(service)]
        assert sorted(shown) == sorted(o["uuid"] for o in orders)
        # No order lands `window` or more places before one that came earlier in the message.
        position = {uuid: i for i, uuid in enumerate(shown)}
        for i, earlier in enumerate(orders):
            for later in orders[i + window:]:
                assert position[earlier["uuid"]] < position[later["uuid"]], (seed, earlier, later)
        reordered += shown != [uuid for uuid, _ in in_order]
    assert reordered > 0, "no schedule reordered the promises of one Create"

    # A Create then an Update of the same order, one message each: the Update is lost in the
    # schedules where it overtakes, and never with window 0.
    lost = 0
    for seed in range(50):
        service = app(window=window, seed=seed)
        service.receive(message(CREATE, {"uuid": A, "customerName": "created"}))
        service.receive(message(UPDATE, {"uuid": A, "customerName": "updated"}))
        service.queue.run()
        lost += screen(service) == [(A, "created")]
        assert screen(service) in ([(A, "created")], [(A, "updated")])
    strict = app(window=0)
    strict.receive(message(CREATE, {"uuid": A, "customerName": "created"}))
    strict.receive(message(UPDATE, {"uuid": A, "customerName": "updated"}))
    strict.queue.run()
    assert screen(strict) == [(A, "updated")]
    assert lost > 0, "no schedule let the Update overtake its Create"
