// WHO's reply parser (src/who.cjs) on canned lines, DELAYED included
// (lockd does not send it yet); the real-lockd tests of who() are in
// lockd.test.mjs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { LockdError } from '../src/index.js';

const { parseWho } = createRequire(import.meta.url)('../src/who.cjs');

const holder = (o) => ({ permit: null, permits: null, client: null, session: null, heldMs: null, ...o });

describe('WHO reply parser', () => {
  it('HOLDER lines of every kind and a DELAYED line; absent fields are null, not 0', () => {
    const w = parseWho([
      'HOLDER 12 exclusive lockd=h:7390 client=127.0.0.1:5555 session=s1 held_ms=0',
      'HOLDER 13 shared lockd=lockd-b',
      'HOLDER 14 permit=2/5 lockd=- client=- session=- held_ms=1500',
      'HOLDER 18446744073709551615 permit=0/- lockd=-',
      'DELAYED 250 16',
    ]);
    assert.deepEqual(w, {
      holders: [
        holder({ fence: 12n, kind: 'exclusive', lockd: 'h:7390', client: '127.0.0.1:5555', session: 's1', heldMs: 0 }),
        holder({ fence: 13n, kind: 'shared', lockd: 'lockd-b' }),
        holder({ fence: 14n, kind: 'permit', permit: 2, permits: 5, lockd: '-', client: '-', session: '-', heldMs: 1500 }),
        holder({ fence: 18446744073709551615n, kind: 'permit', permit: 0, lockd: '-' }),
      ],
      delayed: { msLeft: 250, fence: 16n },
    });
    assert.ok(Object.isFrozen(w) && Object.isFrozen(w.holders) && Object.isFrozen(w.holders[0]) && Object.isFrozen(w.delayed));
    assert.deepEqual(parseWho([]), { holders: [], delayed: null });
    assert.deepEqual(parseWho(['DELAYED 0 9']), { holders: [], delayed: { msLeft: 0, fence: 9n } });
  });

  it('ignores word=value tokens it does not know', () => {
    const w = parseWho(['HOLDER 7 exclusive lockd=a future=1 client=x:1 later=a=b', 'DELAYED 5 8 why=lapsed']);
    assert.deepEqual(w, { holders: [holder({ fence: 7n, kind: 'exclusive', lockd: 'a', client: 'x:1' })], delayed: { msLeft: 5, fence: 8n } });
  });

  it('an unknown line, kind or a malformed field is a PROTOCOL error', () => {
    for (const bad of [
      ['OWNER 7 exclusive lockd=a'],
      ['HOLDER'],
      ['HOLDER 7 exclusive'],
      ['HOLDER x exclusive lockd=a'],
      ['HOLDER -7 exclusive lockd=a'],
      ['HOLDER 7 sole lockd=a'],
      ['HOLDER 7 permit=2 lockd=a'],
      ['HOLDER 7 permit=/3 lockd=a'],
      ['HOLDER 7 exclusive lockd=a held_ms=1.5'],
      ['HOLDER 7 exclusive lockd=a stray'],
      ['DELAYED 5'],
      ['DELAYED x 5'],
      ['DELAYED 5 8', 'DELAYED 4 8'],
      ['ERR QUORUM late'],
    ]) {
      assert.throws(() => parseWho(bad), (e) => e instanceof LockdError && e.code === 'PROTOCOL', bad.join('|'));
    }
  });
});
