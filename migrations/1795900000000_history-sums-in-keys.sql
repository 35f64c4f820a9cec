-- Up Migration

-- A range's statistics are read from the keys alone (index-only scans): the bucket rows' primary keys carry the
-- sums, and the product rows' names. A bucket row is updated by every change of its minute, hour or day, so the
-- rows of one range lie scattered over the table: a week of 2,000 products read about 16,000 of them, one heap
-- page each (5,400 pages; slow once the tables outgrow the database's memory), against about 400 index pages.
-- Index-only scans need pages marked all-visible: vacuuming these tables after 1% of their rows changed (rather
-- than 20%) keeps the settled days marked.

ALTER TABLE history_bucket_products DROP CONSTRAINT history_bucket_products_pkey,
  ADD CONSTRAINT history_bucket_products_pkey PRIMARY KEY (account, level, start, product_id) INCLUDE (quantity, amount, name);
ALTER TABLE history_bucket_totals DROP CONSTRAINT history_bucket_totals_pkey,
  ADD CONSTRAINT history_bucket_totals_pkey PRIMARY KEY (account, level, start, field) INCLUDE (value);
ALTER TABLE history_bucket_products SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01);
ALTER TABLE history_bucket_totals SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01);

-- Down Migration

ALTER TABLE history_bucket_totals RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor);
ALTER TABLE history_bucket_products RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor);
ALTER TABLE history_bucket_totals DROP CONSTRAINT history_bucket_totals_pkey,
  ADD CONSTRAINT history_bucket_totals_pkey PRIMARY KEY (account, level, start, field);
ALTER TABLE history_bucket_products DROP CONSTRAINT history_bucket_products_pkey,
  ADD CONSTRAINT history_bucket_products_pkey PRIMARY KEY (account, level, start, product_id);
