-- One shop for `ordersync rollup` (after ordersync-head-office.sql), as a superuser:
--   psql -v ON_ERROR_STOP=1 -d chain -v role=shop_12 -v store=shop12 -v password='…' \
--        -f /usr/share/ordersync/postgresql/ordersync-add-shop.sql
-- `role` logs in from the shop's roll-up; `store` is the shop's store id (`ordersync status`:
-- "store"); its role writes and reads only that store's rows.
\set ON_ERROR_STOP on
BEGIN;
CREATE ROLE :"role" LOGIN PASSWORD :'password' IN ROLE ordersync_shop;
INSERT INTO ordersync.shops (role_name, store_id) VALUES (:'role', :'store');
COMMIT;
