import { MAX_ENTRIES, MAX_PAYMENTS } from '../history/history-record.js';
import { LEVELS } from '../history/history-stats.js';

/*
 * The history's scripts (redis-history.ts): the rules of history-record.ts and
 * the running sums of history-stats.ts, in Lua, so each change is one atomic
 * round trip. Keys, under the history's prefix H:
 *   r:<id>     a record (hash, fields RECORD_FIELDS)   all         ids by last update (zset)
 *   s:<status> ids of a status by last update (zset)   statuses    the statuses that have one (set)
 *   touched    ids by when the gateway last changed them: retention runs from it (zset)
 *   m<start>, h<start>, d<start>   running sums (hash, fields as history-stats.ts)
 *   seq        the apply order (two events of one millisecond keep their arrival order)
 *   since      when this history was first written    evicted   just after the last update of
 *              (coverage starts no earlier)                      any record dropped for the count
 *
 * Numbers that must stay exact travel and rest as strings: Lua's tostring and
 * cjson keep 14 significant digits. Lua decodes only JSON it encoded itself
 * (what a sender wrote reaches it as plain arguments), and compares ids by
 * bytes, never with `<` (which follows the server's locale).
 */

/**
 * tx transaction JSON (without its products), st status, pr products JSON, ci the contribution as
 * Lua adds it ([increments], [p:<id>, name]), fs first seen, lu last update, lt/ls latest (time, seq),
 * en entries [[time, seq, status, eventId]], pa payments [[time, fields JSON]]. Times and seqs are strings.
 */
export const RECORD_FIELDS = ['tx', 'st', 'pr', 'ci', 'fs', 'lu', 'lt', 'ls', 'en', 'pa'] as const;
/** What reads return of a record, in this order (`ci` is Lua's alone). */
export const READ_FIELDS = RECORD_FIELDS.filter((field) => field !== 'ci');

/** Records past retention dropped by each change (enough to keep up: a change adds at most one record). */
const PRUNE_PER_CHANGE = 10;
/** … and by each page read. */
const PRUNE_PER_READ = 200;
/** Most records dropped past HISTORY_MAX_TRANSACTIONS by one script (it was lowered): the rest go with later ones. */
const TRIM_PER_SCRIPT = 1_000;

/** What every script starts with. ARGV from offset + 1: key prefix, now, now − retention, record TTL, bucket TTL, most transactions. */
const library = (offset: number) => `
local A = ${offset}
local H, NOW, HORIZON, KEEP, BUCKET_KEEP = ARGV[A + 1], ARGV[A + 2], ARGV[A + 3], ARGV[A + 4], ARGV[A + 5]
local MAX_N = tonumber(ARGV[A + 6])
local FIELDS = {${RECORD_FIELDS.map((field) => `'${field}'`).join(', ')}}
local READ = {${READ_FIELDS.map((field) => `'${field}'`).join(', ')}}
local LEVELS = {${LEVELS.map(([level, width]) => `{'${level}', ${width}}`).join(', ')}}

local function int(n) return string.format('%d', n) end

local function less(a, b)
  if a == b then return false end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function load(txid)
  local values = redis.call('HMGET', H .. 'r:' .. txid, unpack(FIELDS))
  if not values[1] then return nil end
  local record = {}
  for i, field in ipairs(FIELDS) do record[field] = values[i] end
  return record
end

-- A record's READ values (with whether: true), unless it is gone, or past retention and not dropped
-- yet (looked for only when lagging: a read that dropped every record past it need not).
local function current(txid, lagging, whether)
  if lagging then
    local touched = redis.call('ZSCORE', H .. 'touched', txid)
    if not touched or tonumber(touched) < tonumber(HORIZON) then return nil end
  end
  if whether then return redis.call('EXISTS', H .. 'r:' .. txid) == 1 end
  local values = redis.call('HMGET', H .. 'r:' .. txid, unpack(READ))
  if values[1] then return values end
  return nil
end

local function copy(record)
  local out = {}
  for field, value in pairs(record or {}) do out[field] = value end
  return out
end

-- The state from ARGV[i] on: transaction JSON, status, products JSON, then the contribution:
-- n, n increments (field, by), m, m product names (p:<id>, name).
local function takeState(record, i)
  record.tx, record.st, record.pr = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local increments, names = {}, {}
  local n = tonumber(ARGV[i + 3])
  for k = 1, 2 * n do increments[k] = ARGV[i + 3 + k] end
  local m = tonumber(ARGV[i + 4 + 2 * n])
  for k = 1, 2 * m do names[k] = ARGV[i + 4 + 2 * n + k] end
  record.ci = cjson.encode({increments, names})
end

-- Adds (1) or takes back (-1) a contribution to the buckets of its last update; taken back only
-- from a bucket that still exists, as one that expired must not come back with negative sums.
local function contribute(lastUpdated, ci, sign)
  local c = cjson.decode(ci)
  local t = tonumber(lastUpdated)
  for _, level in ipairs(LEVELS) do
    local key = H .. level[1] .. int(math.floor(t / level[2]) * level[2])
    if sign > 0 or redis.call('EXISTS', key) == 1 then
      for k = 1, #c[1], 2 do
        local by = c[1][k + 1]
        if sign < 0 and by ~= '0' then by = by:sub(1, 1) == '-' and by:sub(2) or '-' .. by end
        -- A sum past 64 bits is refused: it goes without this amount rather than refuse the event.
        if redis.pcall('HINCRBY', key, c[1][k], by) == 0 then redis.call('HDEL', key, c[1][k]) end
      end
      if sign > 0 and #c[2] > 0 then redis.call('HSET', key, unpack(c[2])) end
      redis.call('PEXPIRE', key, BUCKET_KEEP)
    end
  end
end

local function leave(txid, status)
  local key = H .. 's:' .. status
  redis.call('ZREM', key, txid)
  if redis.call('EXISTS', key) == 0 then redis.call('SREM', H .. 'statuses', status) end
end

local function unindex(txid, record)
  redis.call('ZREM', H .. 'all', txid)
  leave(txid, record.st)
  contribute(record.lu, record.ci, -1)
end

local function drop(txid)
  local values = redis.call('HMGET', H .. 'r:' .. txid, 'st', 'lu', 'ci')
  if values[1] then
    unindex(txid, {st = values[1], lu = values[2], ci = values[3]})
  else
    -- Its record expired on its own (no script ran for a long while): out of every index.
    redis.call('ZREM', H .. 'all', txid)
    for _, status in ipairs(redis.call('SMEMBERS', H .. 'statuses')) do leave(txid, status) end
  end
  redis.call('ZREM', H .. 'touched', txid)
  redis.call('DEL', H .. 'r:' .. txid)
end

-- The least recently updated past the count, then some of what the gateway has not changed for the
-- retention; answers whether some of that may be left.
local function trim(budget)
  local over = math.min(redis.call('ZCARD', H .. 'all') - MAX_N, ${TRIM_PER_SCRIPT})
  if over > 0 then
    local oldest = redis.call('ZRANGE', H .. 'all', 0, over - 1, 'WITHSCORES')
    for i = 1, #oldest, 2 do drop(oldest[i]) end
    -- Coverage starts after the last update of the latest-updated transaction dropped for the count.
    local after = tonumber(oldest[#oldest]) + 1
    if after > tonumber(redis.call('GET', H .. 'evicted') or '0') then redis.call('SET', H .. 'evicted', int(after)) end
  end
  local past = redis.call('ZRANGEBYSCORE', H .. 'touched', '-inf', '(' .. HORIZON, 'LIMIT', 0, budget)
  for _, txid in ipairs(past) do drop(txid) end
  return #past == budget
end

local function store(txid, previous, record)
  if previous then unindex(txid, previous) end
  local key = H .. 'r:' .. txid
  local flat = {}
  for _, field in ipairs(FIELDS) do
    flat[#flat + 1] = field
    flat[#flat + 1] = record[field]
  end
  redis.call('HSET', key, unpack(flat))
  redis.call('PEXPIRE', key, KEEP)
  redis.call('ZADD', H .. 'all', record.lu, txid)
  redis.call('ZADD', H .. 's:' .. record.st, record.lu, txid)
  redis.call('SADD', H .. 'statuses', record.st)
  redis.call('ZADD', H .. 'touched', NOW, txid)
  -- When this history started holding events (coverage starts no earlier).
  redis.call('SET', H .. 'since', NOW, 'NX')
  -- Whole indexes go only when nothing changed for longer than any record is kept.
  for _, name in ipairs({'all', 's:' .. record.st, 'statuses', 'touched', 'seq', 'since', 'evicted'}) do redis.call('PEXPIRE', H .. name, KEEP) end
  contribute(record.lu, record.ci, 1)
  trim(${PRUNE_PER_CHANGE})
end

-- Inserts after every item whose time is not later (the new item has the highest seq), keeps the last max.
local function insertByTime(list, item, max)
  local at = #list + 1
  while at > 1 and tonumber(list[at - 1][1]) > tonumber(item[1]) do at = at - 1 end
  table.insert(list, at, item)
  while #list > max do table.remove(list, 1) end
  return cjson.encode(list)
end

local function nextSeq() return int(redis.call('INCR', H .. 'seq')) end
`;

/**
 * applyEvent (history-record.ts) on the record, in the event log's append
 * script. ARGV after the common ones: transaction id, event id, event time,
 * the event's state (takeState).
 */
export const APPLY_EVENT = `do
${library(8)}
local function apply()
  local txid, eventId, time, status = ARGV[A + 7], ARGV[A + 8], ARGV[A + 9], ARGV[A + 11]
  local previous = load(txid)
  local entries = previous and cjson.decode(previous.en) or {}
  for _, entry in ipairs(entries) do if entry[4] == eventId then return end end
  local seq = nextSeq()
  local record = copy(previous)
  record.en = insertByTime(entries, {time, seq, status, eventId}, ${MAX_ENTRIES})
  if not previous then
    record.fs, record.lu, record.pa = time, time, '[]'
  else
    if tonumber(time) < tonumber(previous.fs) then record.fs = time end
    if tonumber(time) > tonumber(previous.lu) then record.lu = time end
  end
  -- Later than the latest by (time, seq), and seq is the highest yet: not earlier is later.
  if not previous or tonumber(previous.lt) <= tonumber(time) then
    takeState(record, A + 10)
    record.lt, record.ls = time, seq
  end
  store(txid, previous, record)
end
-- As in process, an event the history cannot take is logged and still published (Redis has
-- already appended it, and would not take that back).
local applied, problem = pcall(apply)
if not applied then
  redis.log(redis.LOG_WARNING, 'history: event not applied: ' .. (type(problem) == 'table' and tostring(problem.err) or tostring(problem)))
end
end`;

/**
 * applyPayment. ARGV after the common ones: transaction id, time, fields JSON,
 * 'read-back' or '', and with a read-back its state (takeState). Answers 1
 * when recorded, 0 when there is no record to add it to.
 */
export const NOTE_PAYMENT = `${library(0)}
local txid, time, fields = ARGV[A + 7], ARGV[A + 8], ARGV[A + 9]
local previous = load(txid)
if not previous then
  if ARGV[A + 10] ~= 'read-back' then return 0 end
  local seq = nextSeq()
  local record = {fs = time, lu = time, lt = time, ls = seq}
  takeState(record, A + 11)
  record.en = cjson.encode({{time, seq, record.st, ''}})
  record.pa = cjson.encode({{time, fields}})
  store(txid, nil, record)
  return 1
end
local record = copy(previous)
record.pa = insertByTime(cjson.decode(previous.pa), {time, fields}, ${MAX_PAYMENTS})
if tonumber(time) > tonumber(previous.lu) then record.lu = time end
store(txid, previous, record)
return 1`;

/**
 * One page, newest update first. ARGV after the common ones: first, since,
 * until, the upper bound (score, id: strictly below it), then the statuses
 * (none: all). Answers totalCount, 1 when there is a next page, then id and
 * READ_FIELDS values of each record.
 */
export const RECENT = `${library(0)}
local first, since, before, upperScore, upperId = tonumber(ARGV[A + 7]), ARGV[A + 8], ARGV[A + 9], ARGV[A + 10], ARGV[A + 11]
local lagging = trim(${PRUNE_PER_READ})

-- How many members come before (score, id) in the zset's order (score, then bytes).
local function countBelow(key)
  local low = redis.call('ZCOUNT', key, '-inf', '(' .. upperScore)
  if upperId == '' then return low end
  local own = redis.call('ZSCORE', key, upperId)
  if own and tonumber(own) == tonumber(upperScore) then return redis.call('ZRANK', key, upperId) end
  -- Members of that very score are in id order: the first not below the id, by halves.
  local high = redis.call('ZCOUNT', key, '-inf', upperScore)
  while low < high do
    local mid = math.floor((low + high) / 2)
    if less(redis.call('ZRANGE', key, mid, mid)[1], upperId) then low = mid + 1 else high = mid end
  end
  return low
end

local keys = {}
if #ARGV == A + 11 then keys[1] = H .. 'all' end
for i = A + 12, #ARGV do keys[#keys + 1] = H .. 's:' .. ARGV[i] end
local total, candidates = 0, {}
for _, key in ipairs(keys) do
  total = total + redis.call('ZCOUNT', key, since, '(' .. before)
  local stop = countBelow(key) - 1
  local start = math.max(stop - first, redis.call('ZCOUNT', key, '-inf', '(' .. since))
  if start <= stop then
    local got = redis.call('ZRANGE', key, start, stop, 'WITHSCORES')
    for i = 1, #got, 2 do candidates[#candidates + 1] = {got[i], tonumber(got[i + 1])} end
  end
end
table.sort(candidates, function(a, b) return a[2] > b[2] or (a[2] == b[2] and less(b[1], a[1])) end)
local out, picked = {total, 0}, 0
for _, candidate in ipairs(candidates) do
  if picked == first then
    -- One more that is there: a next page.
    if current(candidate[1], lagging, true) then
      out[2] = 1
      break
    end
  else
    local values = current(candidate[1], lagging)
    if values then
      picked = picked + 1
      out[#out + 1] = candidate[1]
      out[#out + 1] = values
    end
  end
end
return out`;

/** The records of ARGV after the common ones (false where none, or past retention). */
export const RECORDS = `${library(0)}
local out = {}
for i = A + 7, #ARGV do out[#out + 1] = current(ARGV[i], true) or false end
return out`;
