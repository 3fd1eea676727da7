-- Head office's PostgreSQL for `ordersync rollup`: run ONCE, as a superuser, in the database the
-- shops ship into (Docs/OPERATIONS.md, "Head office roll-up (PostgreSQL)"):
--   psql -v ON_ERROR_STOP=1 -d chain -f /usr/share/ordersync/postgresql/ordersync-head-office.sql
-- It makes the schema `ordersync` (schema version 1, as `ordersync rollup` would make it), owned by
-- the role ordersync_owner that no shop is; a group role for the shops, whose members write only
-- their own store's rows (row-level security by store_id); and a role for report writers that
-- reads every shop. Add each shop with ordersync-add-shop.sql.
\set ON_ERROR_STOP on
BEGIN;
CREATE ROLE ordersync_owner NOLOGIN;
CREATE ROLE ordersync_shop NOLOGIN;
CREATE ROLE ordersync_reader NOLOGIN;
CREATE SCHEMA ordersync AUTHORIZATION ordersync_owner;
SET LOCAL ROLE ordersync_owner;

CREATE TABLE ordersync.schema_version (version int NOT NULL);
INSERT INTO ordersync.schema_version (version) VALUES (1);

-- One row per journal entry of each shop: the entry as the shop journalled it (`message`, its JSON
-- byte for byte), its hash and the rolling hash of the shop's journal up to it.
CREATE TABLE ordersync.journal (
    store_id text NOT NULL, lineage text NOT NULL, seq bigint NOT NULL, term bigint NOT NULL,
    op_id text NULL, origin text NOT NULL, operation smallint NOT NULL, message text NOT NULL,
    recorded_at timestamptz NOT NULL, hash bytea NOT NULL, rolling bytea NOT NULL,
    shipped_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store_id, lineage, seq));

-- Each shop's orders as they stand after the last entry shipped (removed ones kept, `removed`);
-- `order` is the whole order as the shop holds it.
CREATE TABLE ordersync.orders (
    store_id text NOT NULL, uuid text NOT NULL, customer_name text, created text,
    shipping_method text, table_name text, table_size bigint, status text, note text,
    items jsonb, "order" jsonb NOT NULL, version bigint NOT NULL, removed boolean NOT NULL DEFAULT false,
    lineage text NOT NULL, seq bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store_id, uuid));

-- Where each shop's roll-up stands: the cursor it reads on every connect.
CREATE TABLE ordersync.checkpoints (
    store_id text NOT NULL, lineage text NOT NULL, seq bigint NOT NULL, rolling bytea,
    updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (store_id, lineage));

-- What a roll-up refused to do: `conflict` (an entry differs from the row head office holds) or
-- `gap` (entries the shop no longer keeps).
CREATE TABLE ordersync.alarms (
    id bigserial PRIMARY KEY, store_id text NOT NULL, lineage text NOT NULL, seq bigint,
    kind text NOT NULL, detail text NOT NULL, at timestamptz NOT NULL DEFAULT now());

-- Which login role ships which store: one row per shop (ordersync-add-shop.sql).
CREATE TABLE ordersync.shops (
    role_name name PRIMARY KEY,
    store_id text NOT NULL UNIQUE
);

-- Report writers: every row of every shop, read only.
GRANT USAGE ON SCHEMA ordersync TO ordersync_shop, ordersync_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA ordersync TO ordersync_reader;
-- Shops: the journal is append-only (no UPDATE, no DELETE: a row once shipped stays as it is).
GRANT SELECT ON ordersync.schema_version, ordersync.shops TO ordersync_shop;
GRANT SELECT, INSERT ON ordersync.journal, ordersync.alarms TO ordersync_shop;
GRANT SELECT, INSERT, UPDATE ON ordersync.orders, ordersync.checkpoints TO ordersync_shop;
GRANT USAGE ON SEQUENCE ordersync.alarms_id_seq TO ordersync_shop;
-- The roll-up copies each batch into two temporary tables of its session (COPY), then into the
-- tables above: PUBLIC may create temporary tables unless that was revoked; granted here all the same.
DO $$ BEGIN EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO ordersync_shop', current_database()); END $$;

-- Row-level security: a shop's role sees and writes only the rows of the store its ordersync.shops
-- row names; readers see all. The owner (no shop, no login) is not bound by the policies.
ALTER TABLE ordersync.shops ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_row ON ordersync.shops TO ordersync_shop USING (role_name = current_user);
CREATE POLICY readers ON ordersync.shops FOR SELECT TO ordersync_reader USING (true);

ALTER TABLE ordersync.journal ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_store ON ordersync.journal TO ordersync_shop
    USING (store_id IN (SELECT s.store_id FROM ordersync.shops s))
    WITH CHECK (store_id IN (SELECT s.store_id FROM ordersync.shops s));
CREATE POLICY readers ON ordersync.journal FOR SELECT TO ordersync_reader USING (true);

ALTER TABLE ordersync.orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_store ON ordersync.orders TO ordersync_shop
    USING (store_id IN (SELECT s.store_id FROM ordersync.shops s))
    WITH CHECK (store_id IN (SELECT s.store_id FROM ordersync.shops s));
CREATE POLICY readers ON ordersync.orders FOR SELECT TO ordersync_reader USING (true);

ALTER TABLE ordersync.checkpoints ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_store ON ordersync.checkpoints TO ordersync_shop
    USING (store_id IN (SELECT s.store_id FROM ordersync.shops s))
    WITH CHECK (store_id IN (SELECT s.store_id FROM ordersync.shops s));
CREATE POLICY readers ON ordersync.checkpoints FOR SELECT TO ordersync_reader USING (true);

ALTER TABLE ordersync.alarms ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_store ON ordersync.alarms TO ordersync_shop
    USING (store_id IN (SELECT s.store_id FROM ordersync.shops s))
    WITH CHECK (store_id IN (SELECT s.store_id FROM ordersync.shops s));
CREATE POLICY readers ON ordersync.alarms FOR SELECT TO ordersync_reader USING (true);
COMMIT;
