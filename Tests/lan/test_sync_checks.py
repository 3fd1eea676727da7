"""The checks of the LAN scenarios (`sync_checks.py`) fail when they should: each is fed a
doctored journal or set of orders, as a broken node would leave them, and must raise. Pure
Python, no processes, no LAN."""

import copy

import pytest

from order_workload import Workload
from sync_checks import (CREATE, REMOVE, UPDATE, CheckFailed, check_applied_once, check_converged,
                         check_final_orders, expected_orders)

A, B = "9437C8F5-D742-46CB-9847-737C5809392C", "0B1F4C2E-5D6A-4E7B-8C9D-0A1B2C3D4E5F"

SENT = [
    {"opId": "w-0", "operation": CREATE, "order": {"uuid": A, "customerName": "w-0", "note": "w:0",
                                                   "x-extra": {"writer": "w", "tags": ["lan"]}}},
    {"opId": "w-1", "operation": UPDATE, "order": {"uuid": A, "note": "w:0|1", "x-updates": 1}},
    {"opId": "w-2", "operation": CREATE, "order": {"uuid": B, "customerName": "w-1", "note": "w:0"}},
    {"opId": "w-3", "operation": UPDATE, "order": {"uuid": A, "note": "w:0|1|2", "x-updates": 2}},
    {"opId": "w-4", "operation": REMOVE, "order": {"uuid": B}},
]

JOURNAL = [{"seq": i + 1, "opId": op["opId"], "operation": op["operation"], "orders": [op["order"]["uuid"]]}
           for i, op in enumerate(SENT)]

ORDER_A = {"uuid": A, "customerName": "w-0", "created": "2024-05-01T10:00:00+0000", "note": "w:0|1|2",
           "status": "open", "version": 3, "x-extra": {"writer": "w", "tags": ["lan"]}, "x-updates": 2}


def ops(sent):
    return [{"opId": op["opId"], "operation": op["operation"], "uuid": op["order"]["uuid"]} for op in sent]


# Exactly once ---------------------------------------------------------------------------------

def test_a_journal_with_each_operation_once_in_order_passes():
    check_applied_once(JOURNAL, ops(SENT))


def test_an_operation_never_applied_fails():
    with pytest.raises(CheckFailed, match="w-3 .* applied 0 times"):
        check_applied_once([e for e in JOURNAL if e["opId"] != "w-3"], ops(SENT))


def test_an_operation_recorded_twice_under_its_id_fails():
    with pytest.raises(CheckFailed, match="w-1 .* applied 2 times"):
        check_applied_once(JOURNAL + [{**JOURNAL[1], "seq": 6}], ops(SENT))


def test_an_operation_applied_again_under_another_or_no_id_fails():
    for replayed_id in ("w-1-again", None):
        with pytest.raises(CheckFailed, match=f"order {A.lower()}: journal op ids"):
            check_applied_once(JOURNAL + [{**JOURNAL[1], "seq": 6, "opId": replayed_id}], ops(SENT))


def test_operations_of_one_order_applied_out_of_order_fail():
    swapped = copy.deepcopy(JOURNAL)
    swapped[1]["seq"], swapped[3]["seq"] = swapped[3]["seq"], swapped[1]["seq"]
    with pytest.raises(CheckFailed, match="journal op ids"):
        check_applied_once(swapped, ops(SENT))


def test_an_operation_journalled_as_another_kind_or_order_fails():
    for doctored in ({"operation": CREATE}, {"orders": [B]}):
        journal = copy.deepcopy(JOURNAL)
        journal[1].update(doctored)
        with pytest.raises(CheckFailed, match="was sent as"):
            check_applied_once(journal, ops(SENT))


# Final state -----------------------------------------------------------------------------------

def test_the_orders_the_operations_make_pass():
    expected = expected_orders(SENT)
    assert expected == {A.lower(): {**SENT[0]["order"], "note": "w:0|1|2", "x-updates": 2, "version": 3},
                        B.lower(): None}
    check_final_orders(expected, [ORDER_A])


@pytest.mark.parametrize("doctored", [
    {"note": "w:0|1"},                       # an older update applied again after the newer one
    {"version": 4},                          # an update applied twice
    {"x-extra": {"writer": "w"}},            # an unknown member changed
    {"x-updates": None},                     # an unknown member lost
])
def test_an_order_that_differs_from_the_operations_fails(doctored):
    order = {k: v for k, v in {**ORDER_A, **doctored}.items() if v is not None}
    with pytest.raises(CheckFailed, match=f"order {A.lower()}"):
        check_final_orders(expected_orders(SENT), [order])


def test_a_removed_order_held_or_a_missing_order_fails():
    with pytest.raises(CheckFailed, match="was removed but is held"):
        check_final_orders(expected_orders(SENT), [ORDER_A, {"uuid": B, "version": 1}])
    with pytest.raises(CheckFailed, match="is missing"):
        check_final_orders(expected_orders(SENT), [])


# Convergence -----------------------------------------------------------------------------------

def test_nodes_holding_the_same_whole_orders_converge():
    check_converged({"master": [ORDER_A], "slave": [{**ORDER_A, "sync": "synced"}]},
                    {"master": [{"uuid_key": A.lower(), "note": "n"}], "slave": [{"uuid_key": A.lower(), "note": "n"}]})


@pytest.mark.parametrize("member, value", [
    ("status", "in_progress"), ("note", "other"), ("items", [{"name": "tea", "quantity": 1, "unitPrice": 250}]),
    ("x-extra", {"writer": "w", "tags": []}), ("tableName", "T1"),
])
def test_one_member_different_on_one_node_is_not_converged(member, value):
    with pytest.raises(CheckFailed, match=f"order {A.lower()} differs between master and slave: .*{member}"):
        check_converged({"master": [ORDER_A], "slave": [{**ORDER_A, member: value}]})


def test_an_unknown_member_missing_on_one_node_is_not_converged():
    stripped = {k: v for k, v in ORDER_A.items() if k != "x-extra"}
    with pytest.raises(CheckFailed, match="x-extra"):
        check_converged({"master": [ORDER_A], "slave": [stripped]})


def test_a_missing_extra_or_doubled_order_is_not_converged():
    other = {**ORDER_A, "uuid": B}
    for views, reason in (({"master": [ORDER_A, other], "slave": [ORDER_A]}, "slave lacks order"),
                          ({"master": [ORDER_A], "slave": [ORDER_A, other]}, "slave holds order"),
                          ({"master": [ORDER_A], "slave": [ORDER_A, ORDER_A]}, "twice")):
        with pytest.raises(CheckFailed, match=reason):
            check_converged(views)


def test_stored_rows_that_differ_are_not_converged():
    with pytest.raises(CheckFailed, match="SQLite files: .*extra_json"):
        check_converged({"master": [ORDER_A], "slave": [ORDER_A]},
                        {"master": [{"uuid_key": A.lower(), "extra_json": "{}"}],
                         "slave": [{"uuid_key": A.lower(), "extra_json": '{"x-extra":1}'}]})


# The workload ------------------------------------------------------------------------------------

def test_the_workload_mixes_creates_updates_and_removes_that_the_checks_can_replay():
    workload, sent = Workload("w"), []
    for i in range(24):
        operation, body = workload.next()
        workload.acknowledged(operation, body)
        sent.append({"opId": f"w-{i}", "operation": operation, "order": body})
    kinds = [op["operation"] for op in sent]
    assert kinds.count(CREATE) == 6 and kinds.count(REMOVE) == 2 and kinds.count(UPDATE) == 16
    assert sum("x-extra" in op["order"] for op in sent) == 3
    expected = expected_orders(sent)
    kept = [order for order in expected.values() if order is not None]
    assert len(kept) == 4 and all(order["version"] == 1 + order["x-updates"] for order in kept)
    assert all(order["note"].count("|") == order["x-updates"] for order in kept)
