"""An emulation of the StorePOS app as a terminal (its slave build), following the app's own
source, driven by JSON lines on stdin and reporting JSON lines on stdout. Run it "on" a LAN host;
`test_storepos_app.py` drives it.

    python storepos_app.py --interface 10.231.7.2 --store /tmp/app-a.json [--utc-offset +0800]

Where each rule comes from (the StorePOS repository, newest version of each file):

* **Two lists** (`OrderService.m`, `DBService.m`, `OrderStore.m`): the in-memory array
  `orders`, which the screen shows (`OrderListTableViewController.m` copies it on every change
  and shows one row per element, duplicates included), and the persisted store (Realm,
  `POSDatabase.realm`; here a JSON file) whose primary key is `uuid` (`OrderStore.primaryKey`).
* **Start** (`AppDelegate.m`, `OrderService.loadAllOrdersInLocalDatabase`,
  `DBService.queryAllOrdersBySortCriteria:`): the store is read into the empty in-memory list
  before anything else. The app asks Realm for the orders sorted by `created` but discards the
  sorted result (`[orderStores sortedResultsUsingProperty:…]` is not assigned), so they come in
  the store's own order: insertion order, where a delete moves the last row into the hole (Realm's
  move-last-over). The emulation keeps its rows that way.
* **Order** (`Order.h`, `OrderStore.m`, YYModel): `uuid`, `customerName`, `shippingMethod`,
  `tableName` (strings), `tableSize` (integer, 0 when absent), `created` (a date; YYModel reads
  the ISO forms `yyyy-MM-dd'T'HH:mm:ssZ` and its variants, writes `yyyy-MM-dd'T'HH:mm:ssZ` in
  the device's time zone, `--utc-offset`). Any other member is dropped when a message is read.
  Numbers given for strings become their text; a missing field is nil.
* **Messages** (`OrderNotification.m/.h`, `OrderService.didReceiveMessage:`): `{"operation": 0
  Create | 1 Update | 2 Remove, "orders": [...]}`. A text that is not a JSON object, a missing
  or non-numeric `operation` (it reads as 0, Create) with no `orders` array, elements of `orders`
  that are not objects, and operations other than 0-2 do nothing. Several orders in one message
  are handled one by one.
* **Create received** (`addOrder:byReceivingMessage:YES`, OrderService.m lines 38-57): the
  order is appended to the in-memory list without looking for its uuid (line 47), then inserted
  in the store (line 50; DBService.m line 90, `createInRealm:withValue:`); the insert of a uuid
  the store holds raises an RLMException that PromiseKit 3.0.0 does not catch: **the app
  crashes** (here: event `crashed`, exit status 3).
* **Update received** (`updateOrderByUUID:…byReceivingMessage:YES`, lines 128-149): the first
  element with the uuid is replaced by the received order (every field as received); an unknown uuid is dropped
  (the promise is cancelled). The store's row, when there is one, gets `customerName`,
  `shippingMethod`, `tableName`, `tableSize` (`DBService.updateOrder:`), never `created`.
* **Remove received** (`removeOrdersByUUIDs:byReceivingMessage:YES`, lines 91-125): when the
  list holds fewer elements than the message names uuids (line 95), nothing at all happens; else
  the first element of each named uuid that is found is removed (lines 98-106, each index once)
  and its uuid deleted from the store (lines 114-117). uuids are compared exactly, case included
  (`indexOfOrderByUUID:`, `isEqualToString:`, line 166).
* **Local changes** (`EditOrderViewController.m`, `OrderListTableViewController.m`,
  `addOrder:`/`updateOrderByUUID:`/`removeOrderByUUID:` with `byReceivingMessage:NO`): applied to
  the list first, then to the store, then sent as one message naming that one order (a Remove
  carries the whole order as it was). A new order has an uppercase `NSUUID` string, the form's
  defaults (`Kevin`, `DHL`, empty table, `-1`) and `created` now. A local Update of an uuid not
  in the list, or a Remove of one (or on an empty list), does nothing and sends nothing.
* **Discovery** (`Constant.h`, `DiscoveryService.m`, `SlaveInstance.m`): browses `_pos._tcp` in
  `local.` and keeps only instances named `POSMaster` (compared case- and
  diacritic-insensitively, so `POSMaster #2` is not one); the first one found is resolved (10 s)
  and connected to at `ws://HOST:PORT/device`; a failed resolve tries the next one; when the
  current service goes away, the next remembered one is resolved. Here python-zeroconf browses on
  the host's interface and HOST is the resolved IPv4 address (the app hands the SRV host name to
  the system resolver).
* **Connection** (`SlaveInstance.m`, PocketSocket): no subprotocol, text messages. A closed or
  failed connection is only logged: the app does not reconnect by itself; only a service that
  disappears and is found again leads to a new connection (the old socket is not closed).
  Sending while not connected loses the message (reported as `send_dropped`).

* **Concurrent handling** (`didReceiveMessage:`, lines 187-215; `dispatch_promise` and
  `thenInBackground`): each order of a received Create or Update is a promise of its own, a
  Remove is one promise for all its uuids; each promise is a step on the list (under a
  semaphore, line 46, which serialises but does not order) and then a step on the store, both
  on the global concurrent queue. The emulation runs them on `DispatchQueueModel`: a step may be
  overtaken by the steps submitted fewer than `--queue-window` places after it (default 8),
  in a schedule drawn from `--seed`. Up to that many steps wait while messages keep coming;
  20 ms without one, or a command, runs them all. Local changes run at once, in order.

Commands (one JSON object a line; `req` is echoed in the answer):

    {"cmd":"start"}                                  # load the store, start browsing
    {"cmd":"create","order":{"customerName":"Ann"}}  # any field may be given, uuid included
    {"cmd":"update","uuid":"…","fields":{"customerName":"Bo"}}
    {"cmd":"remove","uuid":"…"}
    {"cmd":"list"}                                   # the screen's rows and the store's rows
    {"cmd":"stop"}                                   # the app quit: sockets closed, list gone
    {"cmd":"restart"}                                # stop, then start with the store as it is
    {"cmd":"quit"}

Events: `ready`, `started` (`rows`), `found` / `ignored_service` / `service_removed` (`name`),
`resolved`, `resolve_failed`, `connecting` (`url`), `connected`, `connect_failed`, `closed`,
`received` (`operation`, `orders`, `rows`), `sent`, `send_dropped`, `created`,
`updated`, `removed`, `list` (`rows`, `stored`, `maxDuplicates`), `stopped`, `error`, `crashed`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import heapq
import json
import os
import random
import re
import sys
import unicodedata
import uuid as uuidlib

SERVICE_TYPE = "_pos._tcp.local."
SERVICE_NAME = "POSMaster"
FIELDS = ("uuid", "customerName", "shippingMethod", "tableName", "tableSize", "created")
STRING_FIELDS = ("uuid", "customerName", "shippingMethod", "tableName")
CREATE, UPDATE, REMOVE = 0, 1, 2


def emit(**event) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


# The order model (Order.h, YYModel) ----------------------------------------------------------

_DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,3}))?"
                   r"(Z|[+-]\d\d:?\d\d)?)?$")


def parse_offset(text: str) -> dt.timezone:
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))


def parse_date(value, device: dt.timezone) -> dt.datetime | None:
    """A date as YYModel reads it from a string (ISO forms); anything else is nil."""
    if not isinstance(value, str):
        return None
    match = _DATE.match(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    if zone is None:
        tz = device
    elif zone == "Z":
        tz = dt.timezone.utc
    else:
        tz = parse_offset(zone)
    micro = int((fraction or "0").ljust(3, "0")) * 1000
    try:
        return dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                           int(second or 0), micro, tzinfo=tz)
    except ValueError:
        return None


def format_date(value: dt.datetime | None, device: dt.timezone) -> str | None:
    """`yyyy-MM-dd'T'HH:mm:ssZ` in the device's time zone, as YYModel writes an NSDate."""
    if value is None:
        return None
    return value.astimezone(device).strftime("%Y-%m-%dT%H:%M:%S%z")


def as_string(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return str(value)
    return None


def as_integer(value) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value.strip()))
        except ValueError:
            return None
    return None


def order_from_json(member: dict, device: dt.timezone) -> dict:
    """An Order as YYModel builds it from one element of `orders`: known fields only."""
    order = {key: as_string(member.get(key)) for key in STRING_FIELDS}
    size = as_integer(member.get("tableSize"))
    order["tableSize"] = 0 if size is None else size
    order["created"] = parse_date(member.get("created"), device)
    return order


def order_to_json(order: dict, device: dt.timezone) -> dict:
    """An Order as YYModel writes it: nil fields left out."""
    out = {key: order[key] for key in STRING_FIELDS if order.get(key) is not None}
    out["tableSize"] = order["tableSize"]
    created = format_date(order.get("created"), device)
    if created is not None:
        out["created"] = created
    return out


# The persisted store (DBService.m, OrderStore.m; Realm) ---------------------------------------


class PrimaryKeyExists(Exception):
    """Realm refuses to create an object whose primary key is already stored."""


class PersistedStore:
    """The Realm file: rows with `uuid` as primary key, kept in table order (a delete moves the
    last row into the hole), written to a JSON file after every change."""

    def __init__(self, path: str | None, device: dt.timezone):
        self.path = path
        self.device = device
        self.rows: list[dict] = []
        if path is not None and os.path.exists(path):
            with open(path) as f:
                self.rows = [order_from_json(row, device) for row in json.load(f)["rows"]]

    def save(self) -> None:
        if self.path is None:
            return
        temporary = self.path + ".tmp"
        with open(temporary, "w") as f:
            json.dump({"rows": [order_to_json(row, dt.timezone.utc) for row in self.rows]}, f)
        os.replace(temporary, self.path)

    @property
    def rows(self) -> list[dict]:
        return self._rows

    @rows.setter
    def rows(self, rows: list[dict]) -> None:
        self._rows = rows
        self._positions = {row["uuid"]: index for index, row in reversed(list(enumerate(rows)))}

    def index(self, uuid) -> int | None:
        """The row with this primary key (compared exactly)."""
        return self._positions.get(uuid)

    def add(self, order: dict) -> None:
        """`addOrder:` (`createInRealm:withValue:`)."""
        if not isinstance(order["uuid"], str) or self.index(order["uuid"]) is not None:
            raise PrimaryKeyExists(order["uuid"])
        self._rows.append(dict(order))
        self._positions[order["uuid"]] = len(self._rows) - 1
        self.save()

    def remove(self, uuid) -> bool:
        """`removeOrderByUUID:`: deletes the row; the last row takes its place."""
        index = self._positions.pop(uuid, None)
        if index is None:
            return False
        last = self._rows.pop()
        if index < len(self._rows):
            self._rows[index] = last
            self._positions[last["uuid"]] = index
        self.save()
        return True

    def update(self, order: dict) -> bool:
        """`updateOrder:`: four fields of a stored row (never `created`)."""
        index = self.index(order["uuid"])
        if index is None:
            return False
        for key in ("customerName", "shippingMethod", "tableName", "tableSize"):
            self.rows[index][key] = order[key]
        self.save()
        return True

    def all(self) -> list[dict]:
        """`queryAllOrdersBySortCriteria:`: the rows in table order (the sort is discarded)."""
        return [dict(row) for row in self.rows]


# The app's queue (OrderService.m: dispatch_promise / thenInBackground) -------------------------


class AppCrashed(Exception):
    """An exception the app does not catch: Realm's `createInRealm:withValue:` of a primary key
    it holds (DBService.m line 90) raises an RLMException inside a promise, and PromiseKit 3.0.0
    (Podfile.lock) catches only NSError and NSString: the app dies."""


class DispatchQueueModel:
    """The global concurrent queue every promise of `OrderService` runs on (`dispatch_promise`
    and `thenInBackground` dispatch onto it: OrderService.m lines 45, 49, 61, 80, 93, 114, 130,
    141). A GCD queue starts its blocks in the order they were submitted, but runs them at once
    on several threads (a semaphore, line 46, serialises the list, not the order; the Realm
    writes run outside it), so a block submitted later may finish first.

    The model: the n-th step submitted gets the key n + uniform(0, window) and steps run in key
    order, so a step can be overtaken only by steps submitted fewer than `window` places after
    it; a step that finishes may submit the promise's next step (to the end of the queue).
    `window` 0 runs them strictly in order. A seeded `rng` makes a schedule repeatable."""

    def __init__(self, window: int = 0, rng: random.Random | None = None):
        self.window = window
        self.rng = rng or random.Random(0)
        self.pending: list[tuple[float, int, object]] = []
        self.submitted = 0

    def submit(self, step) -> None:
        """`step()` runs once; it may return the next step of its promise."""
        jitter = self.rng.uniform(0, self.window) if self.window else 0.0
        heapq.heappush(self.pending, (self.submitted + jitter, self.submitted, step))
        self.submitted += 1

    def __len__(self) -> int:
        return len(self.pending)

    def run(self, keep: int = 0) -> int:
        """Runs steps (in key order) until at most `keep` wait; returns how many ran."""
        ran = 0
        while len(self.pending) > keep:
            _, _, step = heapq.heappop(self.pending)
            following = step()
            ran += 1
            if following is not None:
                self.submit(following)
        return ran


# The order service (OrderService.m) ------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def parsed(text: str, device: dt.timezone) -> tuple[int, tuple[dict, ...]] | None:
    """A received message as YYModel reads it (`OrderNotification`): its operation (a missing
    or non-numeric one reads as 0, Create) and orders; None when it is not a JSON object. Once
    per text (a model replays the same messages many times); callers copy the orders."""
    try:
        message = json.loads(text)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    operation = as_integer(message.get("operation"))
    members = message.get("orders")
    orders = tuple(order_from_json(m, device) for m in members if isinstance(m, dict)) if isinstance(members, list) else ()
    return (CREATE if operation is None else operation), orders


class OrderService:
    """The in-memory list and what the app does on a received message or a local change.

    A received message becomes promises on `queue` (`didReceiveMessage:`, OrderService.m lines
    187-215): one per order of a Create (line 194) or an Update (line 200), one for all the uuids
    of a Remove (line 208). Each promise is two steps: the list, under the semaphore, then the
    Realm write (`thenInBackground`). Local changes run at once, in order (the tests drive one
    at a time, after the queue has run)."""

    def __init__(self, store: PersistedStore, device: dt.timezone, queue: DispatchQueueModel | None = None):
        self.store = store
        self.device = device
        self.queue = queue if queue is not None else DispatchQueueModel()
        self.orders: list[dict] = []
        self.max_duplicates = 0

    def index(self, uuid) -> int | None:
        """`indexOfOrderByUUID:` (lines 162-172): the first element with the uuid, compared with
        `isEqualToString:` (line 166): exactly, case included."""
        for index, order in enumerate(self.orders):
            if order["uuid"] is not None and order["uuid"] == uuid:
                return index
        return None

    def note_duplicates(self, added=None) -> None:
        """Notes the most doubled rows ever shown; `added`: only that uuid was appended."""
        if added is not None and sum(1 for order in self.orders if order["uuid"] == added) < 2:
            return
        uuids = [order["uuid"] for order in self.orders]
        self.max_duplicates = max(self.max_duplicates, len(uuids) - len(set(uuids)))

    def load(self) -> None:
        """`loadAllOrdersInLocalDatabase` (lines 151-160)."""
        self.orders[0:0] = self.store.all()
        self.note_duplicates()

    # Received ---------------------------------------------------------------------------------

    def add(self, order: dict):
        """`addOrder:byReceivingMessage:YES` (lines 38-57): appended to the list without looking
        for its uuid (line 47), then inserted in Realm (line 50, DBService.m line 90), which
        raises on a uuid it holds (the primary key, OrderStore.m lines 28-30): the app crashes."""
        def append():
            self.orders.append(order)
            self.note_duplicates(order["uuid"])
            return insert

        def insert():
            try:
                self.store.add(order)
            except PrimaryKeyExists:
                raise AppCrashed(f"RLMException: primary key {order['uuid']!r} exists (a received Create)") from None

        return append

    def update(self, order: dict):
        """`updateOrderByUUID:withNewOrder:byReceivingMessage:YES` (lines 128-149): the first
        element with the uuid is replaced (line 134); none: the promise is cancelled (line 139);
        then the Realm row, when there is one, gets four fields (DBService.m lines 111-129)."""
        def replace():
            index = self.index(order["uuid"])
            if index is None:
                return None
            self.orders[index] = order
            return write

        def write():
            self.store.update(order)

        return replace

    def remove(self, uuids: list):
        """`removeOrdersByUUIDs:byReceivingMessage:YES` (lines 91-125): nothing at all while the
        list holds fewer elements than uuids named (line 95); else the first element of each
        uuid found (lines 98-105, each index once), then each one's Realm row (lines 114-117)."""
        def take():
            if len(self.orders) < len(uuids):
                return None
            indexes = sorted({self.index(uuid) for uuid in uuids} - {None})
            removed = [self.orders[i] for i in indexes]
            for i in reversed(indexes):
                del self.orders[i]

            def delete():
                for order in removed:
                    self.store.remove(order["uuid"])
            return delete

        return take

    def receive(self, text: str) -> dict:
        """`didReceiveMessage:` (lines 187-215): the message's promises go on the queue; returns
        what the message holds."""
        message = parsed(text, self.device)
        if message is None:
            return {"operation": None, "orders": 0, "effect": "ignored: not a JSON object"}
        operation, orders = message[0], [dict(order) for order in message[1]]
        result = {"operation": operation, "orders": len(orders)}
        if operation == CREATE:
            for order in orders:
                self.queue.submit(self.add(order))
        elif operation == UPDATE:
            for order in orders:
                self.queue.submit(self.update(order))
        elif operation == REMOVE:
            self.queue.submit(self.remove([order["uuid"] for order in orders]))
        else:
            result["effect"] = "ignored: unknown operation"
        return result

    # Local changes ------------------------------------------------------------------------------

    def local_create(self, fields: dict) -> tuple[dict, str | None]:
        """`EditOrderViewController.addOrder` then `addOrder:byReceivingMessage:NO`: appended,
        inserted in Realm (a uuid it holds crashes the app, as a received one does), sent."""
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        order = {"uuid": str(uuidlib.uuid4()).upper(), "customerName": "Kevin", "shippingMethod": "DHL",
                 "tableName": "", "tableSize": -1, "created": now}
        for key, value in fields.items():
            if key == "created":
                order[key] = parse_date(value, self.device)
            elif key in FIELDS:
                order[key] = value
        step = self.add(order)
        while step is not None:
            step = step()
        return order, self.notification(CREATE, order)

    def local_update(self, uuid: str, fields: dict) -> tuple[dict | None, str | None]:
        """`EditOrderViewController.updateOrder`: the row's order edited, then
        `updateOrderByUUID:withNewOrder:byReceivingMessage:NO`."""
        index = self.index(uuid)
        if index is None:
            return None, None
        order = self.orders[index]
        for key in ("customerName", "shippingMethod", "tableName", "tableSize"):
            if key in fields:
                order[key] = fields[key]
        self.orders[index] = order
        self.store.update(order)
        return order, self.notification(UPDATE, order)

    def local_remove(self, uuid: str) -> tuple[dict | None, str | None]:
        """`removeOrderByUUID:byReceivingMessage:NO` (lines 59-89): the list, then Realm, then
        the message (line 85) carrying the whole order."""
        index = self.index(uuid) if self.orders else None
        if index is None:
            return None, None
        order = self.orders.pop(index)
        self.store.remove(uuid)
        return order, self.notification(REMOVE, order)

    def notification(self, operation: int, order: dict) -> str:
        """`OrderNotification toJSONString` naming one order."""
        return json.dumps({"operation": operation, "orders": [order_to_json(order, self.device)]})

    def rows(self) -> list[dict]:
        return [order_to_json(order, self.device) for order in self.orders]


# Discovery and the connection (DiscoveryService.m, SlaveInstance.m) ---------------------------


def same_service_name(a: str, b: str) -> bool:
    """`compare:options:NSCaseInsensitiveSearch | NSDiacriticInsensitiveSearch` == same."""
    def fold(text: str) -> str:
        decomposed = unicodedata.normalize("NFD", text)
        return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return fold(a) == fold(b)


def instance_name(name: str) -> str:
    suffix = "." + SERVICE_TYPE
    return name[: -len(suffix)] if name.endswith(suffix) else name


class App:
    def __init__(self, interface: str, store_path: str, device: dt.timezone, wanted: str,
                 queue: DispatchQueueModel):
        self.queue = queue
        self.interface = interface
        self.store_path = store_path
        self.device = device
        self.wanted = wanted
        self.service: OrderService | None = None
        self.zeroconf = None
        self.browser = None
        self.services: list[str] = []
        self.current: str | None = None
        self.socket = None
        self.sockets: list = []
        self.tasks: set = set()

    def spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # Start and stop ----------------------------------------------------------------------------

    async def start(self) -> None:
        from zeroconf import IPVersion
        from zeroconf.asyncio import AsyncServiceBrowser, AsyncZeroconf

        self.service = OrderService(PersistedStore(self.store_path, self.device), self.device, self.queue)
        self.service.load()
        emit(ev="started", rows=len(self.service.orders))
        self.services, self.current = [], None
        self.zeroconf = AsyncZeroconf(interfaces=[self.interface], ip_version=IPVersion.V4Only)
        self.browser = AsyncServiceBrowser(self.zeroconf.zeroconf, SERVICE_TYPE, handlers=[self.on_change])

    async def stop(self) -> None:
        if self.browser is not None:
            await self.browser.async_cancel()
            self.browser = None
        if self.zeroconf is not None:
            await self.zeroconf.async_close()
            self.zeroconf = None
        for task in list(self.tasks):
            task.cancel()
        for ws in self.sockets:
            try:
                await asyncio.wait_for(ws.close(), timeout=2)
            except Exception:  # noqa: BLE001 - the app is gone either way
                pass
        self.sockets, self.socket, self.service = [], None, None
        emit(ev="stopped")

    # Discovery ----------------------------------------------------------------------------------

    def on_change(self, zeroconf, service_type, name, state_change) -> None:
        from zeroconf import ServiceStateChange

        instance = instance_name(name)
        if state_change is ServiceStateChange.Added:
            if not same_service_name(self.wanted, instance):
                emit(ev="ignored_service", name=instance)
                return
            emit(ev="found", name=instance)
            self.services.append(name)
            if self.current is None:
                self.resolve(name)
        elif state_change is ServiceStateChange.Removed:
            if name == self.current:
                self.current = None
            if name in self.services:
                index = self.services.index(name)
                self.services.pop(index)
                emit(ev="service_removed", name=instance)
                if self.current is None and self.services:
                    self.resolve(self.services[index % len(self.services)])

    def resolve(self, name: str) -> None:
        self.current = name
        self.spawn(self.resolve_and_connect(name))

    async def resolve_and_connect(self, name: str) -> None:
        from zeroconf import IPVersion
        from zeroconf.asyncio import AsyncServiceInfo

        info = AsyncServiceInfo(SERVICE_TYPE, name)
        resolved = await info.async_request(self.zeroconf.zeroconf, 10_000)
        addresses = info.parsed_addresses(IPVersion.V4Only) if resolved else []
        if not addresses or info.port is None:
            emit(ev="resolve_failed", name=instance_name(name))
            if self.current == name:
                self.current = None
                if name in self.services:
                    self.resolve(self.services[(self.services.index(name) + 1) % len(self.services)])
            return
        emit(ev="resolved", name=instance_name(name), address=addresses[0], port=info.port)
        await self.connect(f"ws://{addresses[0]}:{info.port}/device")

    async def connect(self, url: str) -> None:
        from websockets.asyncio.client import connect

        emit(ev="connecting", url=url)
        try:
            ws = await connect(url, compression=None, max_size=None, ping_interval=None,
                               open_timeout=10, close_timeout=2)
        except Exception as error:  # noqa: BLE001 - the app only logs it
            emit(ev="connect_failed", url=url, error=repr(error))
            return
        self.socket = ws
        self.sockets.append(ws)
        emit(ev="connected", url=url, subprotocol=ws.subprotocol)
        self.spawn(self.read(ws, url))

    def run_queue(self, keep: int = 0) -> None:
        """Runs the app's queue; a crash ends the process, as it ends the app."""
        try:
            self.queue.run(keep)
        except AppCrashed as crash:
            emit(ev="crashed", error=str(crash))
            os._exit(3)

    async def read(self, ws, url: str) -> None:
        """Each message's promises go on the queue; up to `window` steps are left waiting while
        messages keep coming, so later ones can overtake them; 20 ms without a message runs
        them all."""
        from websockets.exceptions import ConnectionClosed

        try:
            while True:
                try:
                    message = await asyncio.wait_for(ws.recv(), timeout=0.02)
                except asyncio.TimeoutError:
                    self.run_queue()
                    continue
                if self.service is None:
                    return
                if isinstance(message, bytes):
                    emit(ev="received", binary=True, effect="ignored: binary", rows=len(self.service.orders))
                    continue
                result = self.service.receive(message)
                self.run_queue(keep=self.queue.window)
                emit(ev="received", rows=len(self.service.orders), **result)
        except ConnectionClosed as error:
            self.run_queue()
            emit(ev="closed", url=url, code=error.rcvd.code if error.rcvd else None)

    async def send(self, text: str | None) -> bool:
        if text is None:
            return False
        ws = self.socket
        if ws is None:
            emit(ev="send_dropped", text=text)
            return False
        try:
            await ws.send(text)
        except Exception as error:  # noqa: BLE001 - lost, as the app loses it
            emit(ev="send_dropped", text=text, error=repr(error))
            return False
        emit(ev="sent", text=text)
        return True

    # Commands -----------------------------------------------------------------------------------

    async def handle(self, command: dict) -> bool:
        cmd, req = command.get("cmd"), command.get("req")
        if self.service is not None:
            self.run_queue()  # what was received is handled before what the user does next
        if cmd == "quit":
            return False
        if cmd == "start":
            await self.start()
        elif cmd == "stop":
            await self.stop()
        elif cmd == "restart":
            await self.stop()
            await self.start()
        elif self.service is None:
            emit(ev="error", req=req, error=f"{cmd}: the app is not running")
        elif cmd == "create":
            order, text = self.service.local_create(command.get("order", {}))
            emit(ev="created", req=req, uuid=order["uuid"], order=order_to_json(order, self.device))
            await self.send(text)
        elif cmd == "update":
            order, text = self.service.local_update(command["uuid"], command.get("fields", {}))
            emit(ev="updated", req=req, uuid=command["uuid"], found=order is not None)
            await self.send(text)
        elif cmd == "remove":
            order, text = self.service.local_remove(command["uuid"])
            emit(ev="removed", req=req, uuid=command["uuid"], found=order is not None)
            await self.send(text)
        elif cmd == "list":
            emit(ev="list", req=req, rows=self.service.rows(),
                 stored=[order_to_json(row, self.device) for row in self.service.store.all()],
                 maxDuplicates=self.service.max_duplicates, connected=self.socket is not None)
        else:
            emit(ev="error", req=req, error=f"unknown command {cmd!r}")
        if cmd in ("start", "stop", "restart"):
            emit(ev="done", req=req, cmd=cmd)
        return True

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        emit(ev="ready")
        while True:
            line = await reader.readline()
            if not line:
                break
            if line.strip() and not await self.handle(json.loads(line)):
                break
        if self.service is not None:
            await self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interface", required=True, help="IPv4 address to browse mDNS on")
    parser.add_argument("--store", required=True, help="the persisted store (JSON file)")
    parser.add_argument("--utc-offset", default="+0000", help="the device's time zone, e.g. +0800")
    parser.add_argument("--queue-window", type=int, default=8,
                        help="how many places a step of the app's queue may be overtaken by (0: in order)")
    parser.add_argument("--seed", type=int, default=None, help="the queue's schedule (default: random)")
    args = parser.parse_args()
    queue = DispatchQueueModel(args.queue_window, random.Random(args.seed))
    app = App(args.interface, args.store, parse_offset(args.utc_offset), SERVICE_NAME, queue)
    asyncio.run(app.run())


if __name__ == "__main__":
    main()
