// The reply of WHO key (protocol 1.4), parsed: pure, no I/O. lockd answers
// zero or more `HOLDER fence kind lockd=NAME [client=ADDR] [session=ID]
// [held_ms=N]` lines and at most one `DELAYED ms_left fence` line, then
// END. A later version may add word=value tokens to a line: they are
// ignored. A line of another kind, a kind this client does not know or a
// malformed number is a LockdError with code PROTOCOL.
'use strict';
const { LockdError } = require('./errors.cjs');

function bad(what, line) {
  return new LockdError('PROTOCOL', `${what} in WHO reply line ${JSON.stringify(line)}`);
}

/** A decimal number as lockd writes it: digits only. */
function digits(s, what, line) {
  if (!/^[0-9]+$/.test(s)) throw bad(`bad ${what} ${JSON.stringify(s)}`, line);
  return s;
}

/** A number of ms or a permit index: digits that fit a safe integer. */
function small(s, what, line) {
  const n = Number(digits(s, what, line));
  if (!Number.isSafeInteger(n)) throw bad(`${what} ${s} out of range`, line);
  return n;
}

/** The word=value tokens of a line (the first of a name counts). */
function tokens(words, line) {
  const out = new Map();
  for (const w of words) {
    const i = w.indexOf('=');
    if (i <= 0) throw bad(`bad token ${JSON.stringify(w)}`, line);
    const name = w.slice(0, i);
    if (!out.has(name)) out.set(name, w.slice(i + 1));
  }
  return out;
}

/** One HOLDER line: a frozen { fence (bigint), kind ('exclusive',
 * 'shared' or 'permit'), permit, permits (numbers, or null: not a permit;
 * permits null also for `permit=i/-`, n unknown), lockd (the holding
 * lockd's name, '-' when no master knows it), client, session, heldMs
 * (null when the line does not carry them: the hold is on another lockd) }. */
function parseHolder(line) {
  const w = line.split(' ');
  if (w.length < 4 || w[0] !== 'HOLDER') throw bad('bad line', line);
  const fence = BigInt(digits(w[1], 'fence', line));
  let kind = w[2];
  let permit = null;
  let permits = null;
  if (kind.startsWith('permit=')) {
    const m = /^permit=([0-9]+)\/([0-9]+|-)$/.exec(kind);
    if (!m) throw bad(`bad kind ${JSON.stringify(kind)}`, line);
    permit = small(m[1], 'permit', line);
    permits = m[2] === '-' ? null : small(m[2], 'permit count', line);
    kind = 'permit';
  } else if (kind !== 'exclusive' && kind !== 'shared') {
    throw bad(`unknown kind ${JSON.stringify(kind)}`, line);
  }
  const x = tokens(w.slice(3), line);
  if (!x.get('lockd')) throw bad('no lockd=', line);
  const held = x.get('held_ms');
  return Object.freeze({
    fence,
    kind,
    permit,
    permits,
    lockd: x.get('lockd'),
    client: x.get('client') ?? null,
    session: x.get('session') ?? null,
    heldMs: held === undefined ? null : small(held, 'held_ms', line),
  });
}

/** The lines of a WHO reply before its END: a frozen { holders (a frozen
 * array of holders, in lockd's order), delayed (a frozen { msLeft, fence },
 * or null) }. A free key: { holders: [], delayed: null }. */
function parseWho(lines) {
  const holders = [];
  let delayed = null;
  for (const line of lines) {
    const sp = line.indexOf(' ');
    const word = sp < 0 ? line : line.slice(0, sp);
    if (word === 'HOLDER') {
      holders.push(parseHolder(line));
    } else if (word === 'DELAYED') {
      const w = line.split(' ');
      if (w.length < 3 || delayed !== null) throw bad('bad line', line);
      tokens(w.slice(3), line);
      delayed = Object.freeze({ msLeft: small(w[1], 'ms_left', line), fence: BigInt(digits(w[2], 'fence', line)) });
    } else {
      throw bad('unexpected line', line);
    }
  }
  return Object.freeze({ holders: Object.freeze(holders), delayed });
}

module.exports = { parseWho };
