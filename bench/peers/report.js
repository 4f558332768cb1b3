#!/usr/bin/env node
'use strict';
// bench/peers/report.js FILE.jsonl: the markdown table and the ratios of
// issue 30 from one bench/peers/run.sh run (its meta line, then one line
// per measured run).
const fs = require('fs');
const os = require('os');

const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const meta = lines.find((l) => l.kind === 'meta') || {};
const runs = lines.filter((l) => l.kind !== 'meta');
const NAMES = { redlock: 'node-redlock', semaphore: 'redis-semaphore', etcd: 'etcd', zookeeper: 'ZooKeeper',
  lockd: 'lockd plain', 'lockd-resumable': 'lockd resumable' };
const order = Object.keys(NAMES).filter((p) => runs.some((r) => r.peer === p));
const pick = (peer, mode, c) => runs.find((r) => r.peer === peer && r.mode === mode && r.c === c);
const num = (x) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
const f = (x, d = 1) => (num(x) === null ? '-' : x >= 1000 && d <= 1 ? `${(x / 1000).toFixed(1)}k` : x.toFixed(d));
const rate = (x) => (num(x) === null ? '-' : x >= 1000 ? `${(x / 1000).toFixed(1)}k` : String(Math.round(x)));
const ms = (x) => (num(x) === null ? '-' : x < 1 ? x.toFixed(3) : x < 10 ? x.toFixed(2) : x.toFixed(1));
const div = (a, b) => (num(a) !== null && num(b) ? a / b : null);
const bad = (r) => (r ? r.violations + r.fence_violations : 0);

console.log(`# lockd and its peers, one run of bench/peers/run.sh ${meta.duration_ms ?? ''}`);
console.log('');
console.log(`${meta.date || ''}: \`nproc\` ${meta.nproc}, CPU ${meta.cpu}, kernel ${meta.kernel}; ` +
  `load average ${meta.loadavg_start} at the start, ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} at the end.`);
const v = (p) => { const r = runs.find((x) => x.peer === p); return r ? r.version : '-'; };
console.log(`node ${meta.node}, redis-server ${meta.redis_server}, etcd ${meta.etcd || '-'}, ZooKeeper ${meta.zookeeper || '-'} ` +
  `(${meta.java || '-'}); node-redlock ${v('redlock')}, redis-semaphore ${v('semaphore')}, etcd3 ${v('etcd')}, ` +
  `node-zookeeper-client ${v('zookeeper')}; ${meta.lockd || 'lockd'} (${meta.commit || '?'}).`);
console.log(`Each run: ${meta.duration_ms} ms after a warm-up; one node process drives every worker; ` +
  'servers, client and lockd share the machine.');
console.log('');
console.log('| | uncontended cycles/s, 16 / 64 workers | handoff p50 / p99 ms (16 workers, hold 1 ms) | ' +
  "masters' CPU us/cycle (64) | Redis commands/cycle (64) | server CPU us/cycle (64) | client CPU us/cycle (64) | violations |");
console.log('|---|---|---|---:|---:|---:|---:|---:|');
for (const p of order) {
  const u16 = pick(p, 'uncontended', 16), u64 = pick(p, 'uncontended', 64), h = pick(p, 'handoff', 16);
  const m = u64 && u64.masters && /^(redlock|semaphore|lockd)/.test(p) ? u64.masters : null;
  const server = u64 && u64.servers ? u64.servers.cpu_us_per_cycle : null;
  const who = p === 'etcd' ? ' (3 etcd)' : p === 'zookeeper' ? ' (3 java)' : p.startsWith('lockd') ? ' (lockd)' : '';
  const viol = runs.filter((r) => r.peer === p).reduce((a, r) => a + bad(r), 0);
  console.log(`| ${NAMES[p]} | ${rate(u16 && u16.cycles_per_s)} / ${rate(u64 && u64.cycles_per_s)} | ` +
    `${ms(h && h.handoff_ms.p50)} / ${ms(h && h.handoff_ms.p99)} | ${f(m && m.cpu_us_per_cycle)} | ` +
    `${f(m && m.commands_per_cycle)} | ${server === null ? '-' : f(server) + who} | ` +
    `${f(u64 && u64.client.cpu_us_per_cycle)} | ${viol ? `**${viol}**` : 0} |`);
}

console.log('');
console.log('## Ratios (issue 30)');
console.log('');
console.log('| ratio | value | goal | from |');
console.log('|---|---:|---|---|');
const ratio = (what, a, b, goal, unit) => {
  const r = div(a, b);
  const met = r === null ? '-' : r <= goal ? 'met' : 'not met';
  console.log(`| ${what} | ${r === null ? '-' : r.toFixed(2)} | <= ${goal} (${met}) | ${f(a, 2)} / ${f(b, 2)} ${unit} |`);
};
const g = (p, k) => { const r = pick(p, 'uncontended', 64); return r && r.masters ? r.masters[k] : null; };
const s = (p) => { const r = pick(p, 'uncontended', 64); return r && r.servers ? r.servers.cpu_us_per_cycle : null; };
ratio("masters' CPU per uncontended cycle (64 workers), lockd plain / node-redlock", g('lockd', 'cpu_us_per_cycle'),
  g('redlock', 'cpu_us_per_cycle'), 0.25, 'us');
ratio("masters' CPU per uncontended cycle (64 workers), lockd resumable / node-redlock",
  g('lockd-resumable', 'cpu_us_per_cycle'), g('redlock', 'cpu_us_per_cycle'), 0.25, 'us');
ratio("masters' CPU per grant, lockd resumable / plain (uncontended, 64)", g('lockd-resumable', 'cpu_us_per_cycle'),
  g('lockd', 'cpu_us_per_cycle'), 1.15, 'us');
ratio('Redis commands per grant, lockd resumable / plain (uncontended, 64)', g('lockd-resumable', 'commands_per_cycle'),
  g('lockd', 'commands_per_cycle'), 1.15, 'commands');
ratio("lockd's own CPU per cycle, resumable / plain (uncontended, 64)", s('lockd-resumable'), s('lockd'), 1.15, 'us');

console.log('');
console.log('## Every run');
console.log('');
console.log('| peer | scenario | workers | cycles/s | acquire p50 / p99 ms | handoff p50 / p99 ms (n) | ' +
  "masters' CPU us/cycle | commands/cycle (scripts) | server CPU us/cycle | client CPU us/cycle | client requests/cycle | failed / errors / violations |");
console.log('|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|');
for (const p of order) {
  for (const r of runs.filter((x) => x.peer === p)) {
    const m = r.masters && /^(redlock|semaphore|lockd)/.test(p) ? r.masters : null;
    console.log(`| ${NAMES[p]} | ${r.mode}${r.mode === 'handoff' ? `, hold ${r.hold_ms} ms` : ''} | ${r.c} | ${r.cycles_per_s} | ` +
      `${ms(r.acquire_ms.p50)} / ${ms(r.acquire_ms.p99)} | ` +
      `${r.mode === 'handoff' ? `${ms(r.handoff_ms.p50)} / ${ms(r.handoff_ms.p99)} (${r.handoff_ms.n})` : '-'} | ` +
      `${f(m && m.cpu_us_per_cycle)} | ${m ? `${f(m.commands_per_cycle)} (${f(m.scripts_per_cycle, 2)})` : '-'} | ` +
      `${f(r.servers && r.servers.cpu_us_per_cycle)} | ${f(r.client.cpu_us_per_cycle)} | ${f(r.client.requests_per_cycle)} | ` +
      `${r.failed_acquires} / ${r.errors + r.lib_errors} / ${bad(r) ? `**${bad(r)}**` : 0} |`);
  }
}
const troubled = runs.filter((r) => r.errors || r.lib_errors || r.drain_timed_out);
if (troubled.length) {
  console.log('');
  for (const r of troubled) {
    console.log(`Errors in ${NAMES[r.peer]} ${r.mode} (${r.c} workers): ${r.errors} failed requests` +
      `${r.last_error ? ` (the last: \`${r.last_error}\`)` : ''}, ${r.lib_errors} lost locks or sessions` +
      `${r.drain_timed_out ? ', and its drain timed out' : ''}.`);
  }
}
const v2 = runs.reduce((a, r) => a + bad(r), 0);
console.log('');
console.log(v2 ? `**MUTUAL EXCLUSION VIOLATED: ${v2} violation(s); see the runs above.**`
  : `Mutual exclusion held in every run (${runs.length} runs, warm-ups included): no key had two holders at once, ` +
    'and every fence (lockd\'s, etcd\'s create revision, ZooKeeper\'s sequence) grew from one holder to the next.');
