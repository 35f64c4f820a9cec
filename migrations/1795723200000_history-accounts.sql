-- Up Migration

-- Each account's history apart (src/contract/accounts.ts): every row names its account, and every key and
-- index leads with it, so that a read of one account never reads another's rows and two accounts may hold
-- the same transaction id. '' is the default account (POST /webhooks): the rows already here are its own.
-- Byte order, as the transaction ids: names are plain ASCII, but a key's order must not hang on a locale.

ALTER TABLE history_transactions ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE history_transactions DROP CONSTRAINT history_transactions_pkey;
ALTER TABLE history_transactions ADD CONSTRAINT history_transactions_pkey PRIMARY KEY (account, transaction_id);
DROP INDEX history_transactions_recent;
CREATE INDEX history_transactions_recent ON history_transactions (account, last_updated, transaction_id);
DROP INDEX history_transactions_status_recent;
CREATE INDEX history_transactions_status_recent ON history_transactions (account, status, last_updated, transaction_id);
-- history_transactions_touched stays as it is: retention sweeps every account at once.

ALTER TABLE history_bucket_totals ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE history_bucket_totals DROP CONSTRAINT history_bucket_totals_pkey;
ALTER TABLE history_bucket_totals ADD CONSTRAINT history_bucket_totals_pkey PRIMARY KEY (account, level, start, field);

ALTER TABLE history_bucket_products ADD COLUMN account text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE history_bucket_products DROP CONSTRAINT history_bucket_products_pkey;
ALTER TABLE history_bucket_products ADD CONSTRAINT history_bucket_products_pkey PRIMARY KEY (account, level, start, product_id);
DROP INDEX history_bucket_products_named;
CREATE INDEX history_bucket_products_named ON history_bucket_products (account, level, product_id, start);

-- Down Migration
-- Back to one history: only the default account's rows can stay (the others' ids may be the same).
DELETE FROM history_transactions WHERE account <> '';
DELETE FROM history_bucket_totals WHERE account <> '';
DELETE FROM history_bucket_products WHERE account <> '';

DROP INDEX history_bucket_products_named;
CREATE INDEX history_bucket_products_named ON history_bucket_products (level, product_id, start);
ALTER TABLE history_bucket_products DROP CONSTRAINT history_bucket_products_pkey;
ALTER TABLE history_bucket_products ADD CONSTRAINT history_bucket_products_pkey PRIMARY KEY (level, start, product_id);
ALTER TABLE history_bucket_products DROP COLUMN account;

ALTER TABLE history_bucket_totals DROP CONSTRAINT history_bucket_totals_pkey;
ALTER TABLE history_bucket_totals ADD CONSTRAINT history_bucket_totals_pkey PRIMARY KEY (level, start, field);
ALTER TABLE history_bucket_totals DROP COLUMN account;

DROP INDEX history_transactions_status_recent;
CREATE INDEX history_transactions_status_recent ON history_transactions (status, last_updated, transaction_id);
DROP INDEX history_transactions_recent;
CREATE INDEX history_transactions_recent ON history_transactions (last_updated, transaction_id);
ALTER TABLE history_transactions DROP CONSTRAINT history_transactions_pkey;
ALTER TABLE history_transactions ADD CONSTRAINT history_transactions_pkey PRIMARY KEY (transaction_id);
ALTER TABLE history_transactions DROP COLUMN account;
