-- Up Migration

-- Money is summed per currency, never across (src/history/history-stats.ts): a bucket's per-currency counts and
-- sums (N:<cur>:<status>, T:<cur>:<status>, S:<cur>) are rows of history_bucket_totals like its other fields; what each
-- product sold in each currency (Q:, A:) is a row of its own here, named by history_bucket_products' row of the product.
-- Sums written before this migration have no per-currency rows: a range before it shows no currency breakdown, and a
-- record kept then is taken back from rows that do not exist (nothing), as one past retention is.
CREATE TABLE history_bucket_currency_products (
  account text COLLATE "C" NOT NULL,
  level text NOT NULL,
  start bigint NOT NULL,
  currency text COLLATE "C" NOT NULL,
  product_id text COLLATE "C" NOT NULL,
  quantity bigint NOT NULL,
  amount bigint NOT NULL,
  touched_at bigint NOT NULL,
  PRIMARY KEY (account, level, start, currency, product_id) INCLUDE (quantity, amount)
);
CREATE INDEX history_bucket_currency_products_touched ON history_bucket_currency_products (touched_at);
ALTER TABLE history_bucket_currency_products SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01);

-- Down Migration
DROP TABLE history_bucket_currency_products;
-- The per-currency fields of history_bucket_totals are left: a version without currencies reads no field it does not know.
