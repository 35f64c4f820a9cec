-- Up Migration

-- One row per transaction: the record the history's rules (src/history/history-record.ts) made,
-- with the columns its reads and its retention look up by.
CREATE TABLE history_transactions (
  -- Byte order (code point order), as the in-process store pages: ids from senders are any text.
  transaction_id text COLLATE "C" PRIMARY KEY,
  status text COLLATE "C" NOT NULL,
  -- The record's last update (ms since the epoch): the recent list's order.
  last_updated bigint NOT NULL,
  -- When the gateway last changed the record (ms): retention counts from it.
  touched_at bigint NOT NULL,
  -- The HistoryRecord as JSON text (json, not jsonb: the transaction's fields keep the order they came in).
  record json NOT NULL
);
-- Pages newest first, for every status and for one.
CREATE INDEX history_transactions_recent ON history_transactions (last_updated, transaction_id);
CREATE INDEX history_transactions_status_recent ON history_transactions (status, last_updated, transaction_id);
-- Retention deletes the least recently changed, in batches.
CREATE INDEX history_transactions_touched ON history_transactions (touched_at);

-- The running sums per minute, hour and day (src/history/history-stats.ts), in two tables so that
-- reading a range's intervals never reads its products. Level 'm' | 'h' | 'd', the bucket's start (ms).
-- Per-status fields (n:<status>, t:<status>, s), one row each; integers: counts, millionths.
CREATE TABLE history_bucket_totals (
  level text NOT NULL,
  start bigint NOT NULL,
  field text COLLATE "C" NOT NULL,
  value bigint NOT NULL,
  touched_at bigint NOT NULL,
  PRIMARY KEY (level, start, field)
);
CREATE INDEX history_bucket_totals_touched ON history_bucket_totals (touched_at);
-- Products sold (the q:, a: and p: fields of a bucket), one row per product and bucket.
CREATE TABLE history_bucket_products (
  level text NOT NULL,
  start bigint NOT NULL,
  product_id text COLLATE "C" NOT NULL,
  quantity bigint NOT NULL,
  amount bigint NOT NULL,
  name text,
  -- The seq of the change that wrote the name: of two instances writing one at once, the later change's wins, as in process.
  name_seq bigint,
  touched_at bigint NOT NULL,
  PRIMARY KEY (level, start, product_id)
);
-- A product's name in the newest bucket of a range.
CREATE INDEX history_bucket_products_named ON history_bucket_products (level, product_id, start);
CREATE INDEX history_bucket_products_touched ON history_bucket_products (touched_at);

-- Values the store keeps about itself: 'started' (ms), when it first held events.
CREATE TABLE history_meta (
  key text PRIMARY KEY,
  value bigint NOT NULL
);

-- The order of events applied at one millisecond (the second half of the history's order key).
CREATE SEQUENCE history_seq;

-- Down Migration
DROP SEQUENCE history_seq;
DROP TABLE history_meta;
DROP TABLE history_bucket_products;
DROP TABLE history_bucket_totals;
DROP TABLE history_transactions;
