// bench.mjs ADDRESS [SECONDS]: uncontended acquire/release cycles per
// second, and handoff latency between two holders of one key (from one's
// release() call to the other's grant), p50/p99.
import { Client } from './src/index.js';

const addr = process.argv[2] ?? '127.0.0.1:7390';
const secs = Number(process.argv[3] ?? 5);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
};
const now = () => Number(process.hrtime.bigint()) / 1e6;

const c = await Client.connect(addr);
await (await c.tryAcquire('bench-warm')).release();
let n = 0;
const end = now() + secs * 1000;
while (now() < end) {
  const l = await c.acquire('bench-node');
  await l.release();
  n++;
}
console.log(`node        : ${(n / secs).toFixed(0).padStart(8)} lock/unlock cycles/s (uncontended)`);

const lat = [];
let releasedAt = 0;
const stop = now() + secs * 1000;
const worker = async () => {
  while (now() < stop) {
    const l = await c.acquire('bench-node-handoff', { wait: 10000 });
    const t = now();
    if (releasedAt) lat.push(t - releasedAt);
    await new Promise((r) => setTimeout(r, 1)); // let the other one queue behind us
    releasedAt = now();
    await l.release();
  }
};
await Promise.all([worker(), worker()]);
console.log(`node handoff: n=${lat.length} p50=${pct(lat, 0.5).toFixed(2)} ms p99=${pct(lat, 0.99).toFixed(2)} ms`);
await c.close();
