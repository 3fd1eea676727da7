"""The baseline: a StorePOS master as a shop's developer writes it in an afternoon.

Python `websockets` (asyncio) and sqlite3 in WAL mode with its usual `synchronous=NORMAL` (no sync
of the log at each commit; `--synchronous FULL` makes each commit durable, as OrderSync's): each
message from a terminal is applied to the `orders` table and committed, then sent as it came to
every other terminal. A terminal that connects gets every order in one Create message. No
journal, no catch-up, no operation ids, no errors reported back: what StorePOS's own master does.

    python3 Scripts/bench/python_master.py --port 7420 --db orders.sqlite
"""

import argparse
import asyncio
import json
import sqlite3

import websockets

CREATE, UPDATE, REMOVE = 0, 1, 2
FIELDS = ("customerName", "created", "shippingMethod", "tableName", "tableSize")


class Store:
    def __init__(self, path, synchronous="NORMAL"):
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={synchronous}")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS orders (uuid TEXT PRIMARY KEY, customerName TEXT, created TEXT,"
            " shippingMethod TEXT, tableName TEXT, tableSize INTEGER)")

    def apply(self, message):
        operation = message.get("operation")
        orders = [o for o in message.get("orders", []) if isinstance(o, dict) and isinstance(o.get("uuid"), str)]
        self.db.execute("BEGIN")
        try:
            for o in orders:
                if operation == REMOVE:
                    self.db.execute("DELETE FROM orders WHERE uuid = ?", (o["uuid"],))
                elif operation in (CREATE, UPDATE):
                    self.db.execute(
                        "INSERT OR REPLACE INTO orders (uuid, customerName, created, shippingMethod, tableName, tableSize)"
                        " VALUES (?, ?, ?, ?, ?, ?)", (o["uuid"], *(o.get(f) for f in FIELDS)))
            self.db.execute("COMMIT")
        except Exception:
            self.db.execute("ROLLBACK")
            raise

    def all_orders(self):
        rows = self.db.execute("SELECT uuid, customerName, created, shippingMethod, tableName, tableSize FROM orders")
        return [dict(zip(("uuid",) + FIELDS, row)) for row in rows]


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=7420)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--db", default="orders.sqlite")
    parser.add_argument("--synchronous", choices=("NORMAL", "FULL"), default="NORMAL",
                        help="SQLite's synchronous setting: FULL syncs the log at every commit")
    args = parser.parse_args()
    store = Store(args.db, args.synchronous)
    terminals = set()

    async def terminal(ws):
        terminals.add(ws)
        try:
            await ws.send(json.dumps({"operation": CREATE, "orders": store.all_orders()}))
            async for text in ws:
                try:
                    message = json.loads(text)
                    store.apply(message)
                except (ValueError, TypeError, AttributeError, sqlite3.Error):
                    continue
                others = [t for t in terminals if t is not ws]
                websockets.broadcast(others, text)
        finally:
            terminals.discard(ws)

    async with websockets.serve(terminal, args.host, args.port, max_size=16 << 20, ping_interval=None):
        print(f"listening on {args.port}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
