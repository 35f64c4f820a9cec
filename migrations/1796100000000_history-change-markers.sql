-- Up Migration

-- A change marker per account: a new random value written in the same database transaction as every change of the
-- account's records (insert, update, delete), by the database itself (triggers), whoever the writer is: an instance
-- of any version, retention's sweeps, a hand edit. An instance keeps the recent pages it read with the marker read in
-- the same statement (one snapshot); reading the marker again and finding it unchanged proves that no change to the
-- account's records committed since, so the page kept is the one the database would give (src/postgres/recent-pages.ts).
-- Random rather than counted: a database restored to an earlier point, or a replica promoted that missed commits,
-- never gives an old marker back to different records. The row is never deleted (an account's marker never returns).
CREATE TABLE history_changes (
  account text COLLATE "C" PRIMARY KEY,
  marker uuid NOT NULL
);

-- Rows are locked in account order, so two transactions writing several accounts take them in one order.
CREATE FUNCTION history_mark_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE history_changes SET marker = gen_random_uuid();
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO history_changes (account, marker)
      SELECT account, gen_random_uuid() FROM (SELECT DISTINCT account FROM changed_before) a ORDER BY account
      ON CONFLICT (account) DO UPDATE SET marker = excluded.marker;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO history_changes (account, marker)
      SELECT account, gen_random_uuid() FROM (SELECT account FROM changed_before UNION SELECT account FROM changed_after) a ORDER BY account
      ON CONFLICT (account) DO UPDATE SET marker = excluded.marker;
  ELSE
    INSERT INTO history_changes (account, marker)
      SELECT account, gen_random_uuid() FROM (SELECT DISTINCT account FROM changed_after) a ORDER BY account
      ON CONFLICT (account) DO UPDATE SET marker = excluded.marker;
  END IF;
  RETURN NULL;
END
$$;

-- Statement-level: one marker write per account per statement, however many rows it changed.
CREATE TRIGGER history_changes_insert AFTER INSERT ON history_transactions
  REFERENCING NEW TABLE AS changed_after FOR EACH STATEMENT EXECUTE FUNCTION history_mark_changed();
CREATE TRIGGER history_changes_update AFTER UPDATE ON history_transactions
  REFERENCING OLD TABLE AS changed_before NEW TABLE AS changed_after FOR EACH STATEMENT EXECUTE FUNCTION history_mark_changed();
CREATE TRIGGER history_changes_delete AFTER DELETE ON history_transactions
  REFERENCING OLD TABLE AS changed_before FOR EACH STATEMENT EXECUTE FUNCTION history_mark_changed();
CREATE TRIGGER history_changes_truncate AFTER TRUNCATE ON history_transactions
  FOR EACH STATEMENT EXECUTE FUNCTION history_mark_changed();

-- Down Migration
DROP TRIGGER history_changes_truncate ON history_transactions;
DROP TRIGGER history_changes_delete ON history_transactions;
DROP TRIGGER history_changes_update ON history_transactions;
DROP TRIGGER history_changes_insert ON history_transactions;
DROP FUNCTION history_mark_changed();
DROP TABLE history_changes;
