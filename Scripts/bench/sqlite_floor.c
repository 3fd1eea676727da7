/*
 * sqlite_floor: the least SQLite work that keeps the master's guarantees for a StorePOS Create,
 * and the master's own statements added one at a time, for instruction counts under callgrind
 * (Scripts/callgrind_breakdown.py runs it; Docs/PERFORMANCE.md, "Where an operation's
 * instructions go", has the figures).
 *
 *   sqlite_floor FEATURES ITERATIONS GROUP PATH
 *
 * Per operation it writes one order row (the master's columns and values: about 200 bytes) and
 * one journal row (the broadcast the master stores, about 330 bytes), with every statement
 * prepared once. Every GROUP operations are one transaction (BEGIN IMMEDIATE ... COMMIT), as a
 * group commit is. PATH ":memory:" is what the Swift microbenchmark uses; a file is opened in
 * WAL mode with synchronous=FULL and temp_store=MEMORY, as the master opens its store, so every
 * COMMIT is on disk when it returns.
 *
 * FEATURES is "floor" (the two rows above: the order's primary key, the journal's integer key,
 * nothing else) or any of these letters, each one thing the master does per operation:
 *   c  the index orders_by_created (created_ms, uuid_key): order lists
 *   s  the index orders_by_status (status, created_ms, uuid_key): order lists by status
 *   o  journal.op_id UNIQUE (NULL for a StorePOS Create; the index entry is written anyway)
 *   j  a journal_orders row (uuid_key, seq) and its index journal_orders_by_seq
 *   f  PRAGMA foreign_keys=ON (journal_orders.seq REFERENCES journal: a lookup per row)
 *   l  the two reads before the write: the order by uuid_key, its tombstone
 *   p  SAVEPOINT ... RELEASE around each operation
 *   n  a second, nested SAVEPOINT ... RELEASE around the journal rows
 *   t  sqlite3_clear_bindings after every statement's reset, as the Swift wrapper does
 *   M  no memory statistics (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)): not a statement, a
 *      setting that spares every SQLite allocation a global mutex
 * "ours" is "csojflpn", every statement the master runs for a StorePOS Create today.
 *
 * The measured work is in run_ops(), which callgrind counts alone (--toggle-collect=run_ops);
 * the schema and the connection are made before. Two runs (N and 2N) give the instructions per
 * operation as (Ir(2N) - Ir(N)) / N.
 *
 *   gcc -O2 -Wall -Wextra -o sqlite_floor sqlite_floor.c -lsqlite3
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlite3 *db;
static const char *features = "";
static int group_size = 100;

static int has(char c) { return strcmp(features, "floor") != 0 && strchr(features, c) != NULL; }

static void die(const char *what) {
    fprintf(stderr, "sqlite_floor: %s: %s\n", what, db ? sqlite3_errmsg(db) : "no connection");
    exit(1);
}

static void exec(const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlite_floor: %s: %s\n", sql, err ? err : "?");
        exit(1);
    }
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) die(sql);
    return s;
}

static void run(sqlite3_stmt *s, int rows_expected) {
    int rc, rows = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) rows++;
    if (rc != SQLITE_DONE) die(sqlite3_sql(s));
    if (rows_expected >= 0 && rows != rows_expected) die("unexpected row count");
    sqlite3_reset(s);
    if (has('t')) sqlite3_clear_bindings(s);
}

static sqlite3_stmt *begin_s, *commit_s, *sp_s, *release_s, *order_s, *journal_s, *jorder_s, *lookup_s, *tomb_s;
static long long next_seq = 1;

static void schema(void) {
    exec("CREATE TABLE orders (uuid_key TEXT PRIMARY KEY NOT NULL, uuid TEXT NOT NULL, customer_name TEXT NOT NULL,"
         " created_text TEXT NOT NULL, created_ms INTEGER NOT NULL, created_offset_min INTEGER NOT NULL,"
         " shipping_method TEXT, table_name TEXT, table_size INTEGER, extra_json TEXT NOT NULL DEFAULT '{}',"
         " version INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'open', items_json TEXT, note TEXT) WITHOUT ROWID");
    if (has('c')) exec("CREATE INDEX orders_by_created ON orders (created_ms, uuid_key)");
    if (has('s')) exec("CREATE INDEX orders_by_status ON orders (status, created_ms, uuid_key)");
    exec(has('o') ? "CREATE TABLE journal (seq INTEGER PRIMARY KEY, op_id TEXT UNIQUE, origin TEXT NOT NULL,"
                    " operation INTEGER NOT NULL CHECK (operation IN (0, 1, 2)), order_uuids TEXT NOT NULL,"
                    " message TEXT NOT NULL, recorded_at_ms INTEGER NOT NULL, term INTEGER NOT NULL DEFAULT 1)"
                  : "CREATE TABLE journal (seq INTEGER PRIMARY KEY, op_id TEXT, origin TEXT NOT NULL,"
                    " operation INTEGER NOT NULL CHECK (operation IN (0, 1, 2)), order_uuids TEXT NOT NULL,"
                    " message TEXT NOT NULL, recorded_at_ms INTEGER NOT NULL, term INTEGER NOT NULL DEFAULT 1)");
    exec("CREATE TABLE journal_orders (uuid_key TEXT NOT NULL, seq INTEGER NOT NULL REFERENCES journal (seq)"
         " ON DELETE CASCADE, PRIMARY KEY (uuid_key, seq)) WITHOUT ROWID");
    exec("CREATE INDEX journal_orders_by_seq ON journal_orders (seq)");
    exec("CREATE TABLE tombstones (uuid_key TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL) WITHOUT ROWID");
    begin_s = prepare("BEGIN IMMEDIATE");
    commit_s = prepare("COMMIT");
    sp_s = prepare("SAVEPOINT nested");
    release_s = prepare("RELEASE nested");
    order_s = prepare("INSERT INTO orders (uuid_key, uuid, customer_name, created_text, created_ms, created_offset_min,"
                      " shipping_method, table_name, table_size, extra_json, version, status, items_json, note)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    journal_s = prepare("INSERT INTO journal (seq, op_id, origin, operation, order_uuids, message, recorded_at_ms, term)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    jorder_s = prepare("INSERT INTO journal_orders (uuid_key, seq) VALUES (?, ?) ON CONFLICT DO NOTHING");
    lookup_s = prepare("SELECT uuid, customer_name, created_ms, created_offset_min, shipping_method, table_name,"
                       " table_size, extra_json, version, status, items_json, note FROM orders WHERE uuid_key = ?");
    tomb_s = prepare("SELECT 1 FROM tombstones WHERE uuid_key = ?");
}

static void text(sqlite3_stmt *s, int i, const char *t) {
    if (sqlite3_bind_text(s, i, t, (int)strlen(t), SQLITE_TRANSIENT) != SQLITE_OK) die("bind");
}

/* One StorePOS Create of order i, as the master stores it. */
static void operation(long long i) {
    char key[40], upper[40], name[48], table[8], uuids[48], message[512];
    snprintf(key, sizeof key, "6f1c2a3b-0000-4000-8000-%012llx", i);
    snprintf(upper, sizeof upper, "6F1C2A3B-0000-4000-8000-%012llX", i);
    snprintf(name, sizeof name, "Guest %lld at the window", i);
    snprintf(table, sizeof table, "T%lld", i % 40);
    snprintf(uuids, sizeof uuids, "[\"%s\"]", upper);
    long long seq = next_seq++;
    snprintf(message, sizeof message,
             "{\"type\":\"applied\",\"operation\":0,\"orders\":[{\"uuid\":\"%s\",\"customerName\":\"%s\","
             "\"created\":\"2016-01-12T21:35:16+0800\",\"shippingMethod\":\"pickup\",\"tableName\":\"%s\","
             "\"tableSize\":%lld,\"version\":1,\"status\":\"open\"}],\"seq\":%lld,\"origin\":\"10.0.0.1:5000\",\"term\":1}",
             upper, name, table, 1 + i % 8, seq);
    if (has('l')) {
        text(lookup_s, 1, key);
        run(lookup_s, 0);
        text(tomb_s, 1, key);
        run(tomb_s, 0);
    }
    if (has('p')) run(sp_s, 0);
    text(order_s, 1, key);
    text(order_s, 2, upper);
    text(order_s, 3, name);
    text(order_s, 4, "2016-01-12T21:35:16+0800");
    sqlite3_bind_int64(order_s, 5, 1452605716000LL);
    sqlite3_bind_int64(order_s, 6, 480);
    text(order_s, 7, "pickup");
    text(order_s, 8, table);
    sqlite3_bind_int64(order_s, 9, 1 + i % 8);
    text(order_s, 10, "{}");
    sqlite3_bind_int64(order_s, 11, 1);
    text(order_s, 12, "open");
    sqlite3_bind_null(order_s, 13);
    sqlite3_bind_null(order_s, 14);
    run(order_s, 0);
    if (has('n')) run(sp_s, 0);
    sqlite3_bind_int64(journal_s, 1, seq);
    sqlite3_bind_null(journal_s, 2);
    text(journal_s, 3, "10.0.0.1:5000");
    sqlite3_bind_int64(journal_s, 4, 0);
    text(journal_s, 5, uuids);
    text(journal_s, 6, message);
    sqlite3_bind_int64(journal_s, 7, 1452605716000LL);
    sqlite3_bind_int64(journal_s, 8, 1);
    run(journal_s, 0);
    if (has('j')) {
        text(jorder_s, 1, key);
        sqlite3_bind_int64(jorder_s, 2, seq);
        run(jorder_s, 0);
    }
    if (has('n')) run(release_s, 0);
    if (has('p')) run(release_s, 0);
}

static long long next_order = 0;

/* The measured work: `count` operations in groups of `group_size`, each group committed. */
__attribute__((noinline)) void run_ops(long long count) {
    long long done = 0;
    while (done < count) {
        run(begin_s, 0);
        for (int k = 0; k < group_size && done < count; k++, done++) operation(next_order++);
        run(commit_s, 0);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: sqlite_floor FEATURES ITERATIONS GROUP PATH (FEATURES: floor, ours or letters of csojflpnt)\n");
        return 2;
    }
    features = strcmp(argv[1], "ours") == 0 ? "csojflpn" : argv[1];
    long long iterations = atoll(argv[2]);
    group_size = atoi(argv[3]);
    if (iterations <= 0 || group_size <= 0) {
        fprintf(stderr, "sqlite_floor: ITERATIONS and GROUP must be positive\n");
        return 2;
    }
    const char *path = argv[4];
    /* "SQLITE_CONFIG_MEMSTATUS ... This option takes single argument of type int, interpreted as a
     * boolean, which enables or disables the collection of memory allocation statistics": with
     * them on (the default), every sqlite3_malloc and sqlite3_free takes a global mutex. */
    if (has('M') && sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK) die("SQLITE_CONFIG_MEMSTATUS");
    if (strcmp(path, ":memory:") != 0) { /* a fresh file each run, with no WAL of an earlier one */
        char companion[4096];
        remove(path);
        snprintf(companion, sizeof companion, "%s-wal", path);
        remove(companion);
        snprintf(companion, sizeof companion, "%s-shm", path);
        remove(companion);
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        die("open");
    exec("PRAGMA journal_mode = WAL");
    exec("PRAGMA synchronous = FULL");
    exec("PRAGMA temp_store = MEMORY");
    exec("PRAGMA cache_size = -8192");
    exec(has('f') ? "PRAGMA foreign_keys = ON" : "PRAGMA foreign_keys = OFF");
    schema();
    run_ops(50); /* a warm-up, the same in both runs */
    run_ops(iterations);
    sqlite3_int64 n = 0;
    sqlite3_stmt *count = prepare("SELECT count(*) FROM orders");
    if (sqlite3_step(count) == SQLITE_ROW) n = sqlite3_column_int64(count, 0);
    sqlite3_finalize(count);
    printf("{\"features\":\"%s\",\"iterations\":%lld,\"group\":%d,\"orders\":%lld}\n", argv[1], iterations, group_size,
           (long long)n);
    if (n != iterations + 50) return 1;
    return 0;
}
