-- Up Migration

-- The event log of a deployment whose events are kept in PostgreSQL (DATABASE_URL without REDIS_URL): each event new to
-- the history is written here in the same database transaction that applies it, at the position the history gave it
-- (history_seq), so that a subscriber resuming with `after` from before a restart gets what it missed. Trimmed to the
-- newest EVENT_LOG_SIZE by the history's sweep; `event_log_trimmed` keeps the highest position deleted, so a cursor
-- older than what is left is told so (EVENTS_EXPIRED) rather than given a replay with a gap.
CREATE TABLE event_log (
  position bigint PRIMARY KEY,
  account text COLLATE "C" NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  event json NOT NULL
);
CREATE INDEX event_log_by_event_id ON event_log (account, event_id, position);

CREATE TABLE event_log_trimmed (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  upto bigint NOT NULL
);
INSERT INTO event_log_trimmed (upto) VALUES (0);

-- Down Migration

DROP TABLE event_log_trimmed;
DROP TABLE event_log;
