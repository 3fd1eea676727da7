"""The checks the end-to-end scenarios make on what the nodes hold, as pure functions (no
processes, no files), so that `test_sync_checks.py` can show each of them failing on doctored
input.

* Convergence: every node holds the same orders, each compared whole (every member, unknown
  ones such as `x-extra` included), not a few chosen fields.
* Exactly once: the master's journal holds one entry per operation id a test sent, naming the
  order it was sent for, and each order's entries are exactly the operations sent for it, in the
  order they were sent (an operation applied again under another or no operation id shows).
* Final state: replaying the operations a test sent gives every order as the nodes hold it;
  updates append to the note and bump `version`, so a repeat applied out of turn shows.
"""

from __future__ import annotations

import json
from collections import Counter

#: Members a slave's local API adds to an order to describe its own link to the master; they are
#: not part of the order (not stored with it, not replicated).
NODE_LOCAL_MEMBERS = ("sync", "syncError")

#: Journal operation kinds (the `operation` column, and `operation` in messages).
CREATE, UPDATE, REMOVE = 0, 1, 2


class CheckFailed(AssertionError):
    """A check found a difference; the message lists it."""


def stored_form(order: dict) -> dict:
    """The order as a node stores it: what its local API shows, without the node-local members."""
    return {k: v for k, v in order.items() if k not in NODE_LOCAL_MEMBERS}


def _by_uuid(orders: list[dict], node: str, problems: list[str], key=lambda o: o["uuid"]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for order in orders:
        uuid = str(key(order)).lower()
        if uuid in out:
            problems.append(f"{node} holds order {uuid} twice")
        out[uuid] = order
    return out


def _member_differences(a: dict, b: dict) -> list[str]:
    names = sorted(set(a) | set(b))
    return [f"{name}: {json.dumps(a.get(name, '<absent>'))} vs {json.dumps(b.get(name, '<absent>'))}"
            for name in names if (name in a) != (name in b) or a.get(name) != b.get(name)]


def view_differences(views: dict[str, list[dict]], key=lambda o: o["uuid"]) -> list[str]:
    """How the nodes' order sets differ (empty when they are the same). `views` maps a node's name
    to its orders, each a dict compared member by member; `key` gives an order's uuid."""
    problems: list[str] = []
    maps = {node: _by_uuid(orders, node, problems, key) for node, orders in views.items()}
    if not maps:
        return problems
    first, reference = next(iter(maps.items()))
    for node, held in maps.items():
        if node == first:
            continue
        for uuid in sorted(set(reference) - set(held)):
            problems.append(f"{node} lacks order {uuid} that {first} holds")
        for uuid in sorted(set(held) - set(reference)):
            problems.append(f"{node} holds order {uuid} that {first} lacks")
        for uuid in sorted(set(held) & set(reference)):
            differences = _member_differences(reference[uuid], held[uuid])
            if differences:
                problems.append(f"order {uuid} differs between {first} and {node}: " + "; ".join(differences))
    return problems


def api_view_differences(views: dict[str, list[dict]]) -> list[str]:
    """`view_differences` of orders as local APIs list them, node-local members left out."""
    return view_differences({node: [stored_form(o) for o in orders] for node, orders in views.items()})


def check_converged(views: dict[str, list[dict]], rows: dict[str, list[dict]] | None = None) -> None:
    """Raises CheckFailed unless every node lists the same whole orders (`views`, from the local
    APIs) and, when given, stores the same rows (`rows`: every column of the orders table)."""
    problems = api_view_differences(views)
    if rows is not None:
        problems += [f"SQLite files: {p}" for p in view_differences(rows, key=lambda r: r["uuid_key"])]
    if problems:
        raise CheckFailed("the nodes do not hold the same orders:\n  " + "\n  ".join(problems[:20]))


def check_applied_once(journal: list[dict], sent: list[dict]) -> None:
    """Raises CheckFailed unless the master's `journal` (entries with `seq`, `opId`, `operation`,
    `orders`: the uuids it names) shows each operation in `sent` (`opId`, `operation`, `uuid`)
    applied exactly once, and nothing else applied to the orders `sent` names.

    Operation ids are UNIQUE in the journal table, so a repeat cannot show as a second entry with
    the same id; it shows as an entry under another (or no) id naming the same order, which the
    per-order comparison catches."""
    problems: list[str] = []
    entries = sorted(journal, key=lambda e: e["seq"])
    per_id = Counter(e["opId"] for e in entries if e["opId"] is not None)
    by_id = {e["opId"]: e for e in entries if e["opId"] is not None}
    for op in sent:
        count = per_id.get(op["opId"], 0)
        if count != 1:
            problems.append(f"operation {op['opId']} ({op['operation']} of {op['uuid']}) applied {count} times")
            continue
        entry = by_id[op["opId"]]
        if entry["operation"] != op["operation"] or [u.lower() for u in entry["orders"]] != [op["uuid"].lower()]:
            problems.append(f"operation {op['opId']} was sent as {op['operation']} of {op['uuid']}, "
                            f"journalled as {entry['operation']} of {entry['orders']} (seq {entry['seq']})")
    expected: dict[str, list[str]] = {}
    for op in sent:
        expected.setdefault(op["uuid"].lower(), []).append(op["opId"])
    recorded: dict[str, list] = {uuid: [] for uuid in expected}
    for entry in entries:
        for uuid in {u.lower() for u in entry["orders"]}:
            if uuid in recorded:
                recorded[uuid].append(entry["opId"])
    for uuid, ids in expected.items():
        if recorded[uuid] != ids:
            problems.append(f"order {uuid}: journal op ids {recorded[uuid]} (by seq), sent {ids}")
    if problems:
        raise CheckFailed(f"{len(problems)} problems with exactly-once application:\n  " + "\n  ".join(problems[:20]))


def expected_orders(sent: list[dict]) -> dict[str, dict | None]:
    """Replays `sent` (`operation` and `order`: the body sent, in the order sent): each order's
    members as the master should hold them, with `version` (1 at Create, +1 per Update), or None
    for a removed order. Every Update is assumed to change something."""
    orders: dict[str, dict | None] = {}
    for op in sent:
        body, uuid = op["order"], op["order"]["uuid"].lower()
        if op["operation"] == CREATE:
            orders[uuid] = {**body, "version": 1}
        elif op["operation"] == UPDATE:
            current = orders[uuid]
            for name, value in body.items():
                if name == "uuid":
                    continue
                if value is None:
                    current.pop(name, None)
                else:
                    current[name] = value
            current["version"] += 1
        elif op["operation"] == REMOVE:
            orders[uuid] = None
    return orders


def check_final_orders(expected: dict[str, dict | None], orders: list[dict]) -> None:
    """Raises CheckFailed unless `orders` (as a node lists them) hold every expected order with
    every expected member at its expected value, and none of the expected removals."""
    problems: list[str] = []
    held = _by_uuid(orders, "the node", problems)
    for uuid, want in expected.items():
        have = held.get(uuid)
        if want is None:
            if have is not None:
                problems.append(f"order {uuid} was removed but is held: {json.dumps(have)}")
            continue
        if have is None:
            problems.append(f"order {uuid} is missing")
            continue
        wrong = [f"{name}: {json.dumps(have.get(name, '<absent>'))}, expected {json.dumps(value)}"
                 for name, value in want.items()
                 if name != "uuid" and have.get(name) != value]
        if wrong:
            problems.append(f"order {uuid}: " + "; ".join(wrong))
    if problems:
        raise CheckFailed(f"{len(problems)} orders differ from the operations sent:\n  " + "\n  ".join(problems[:20]))
