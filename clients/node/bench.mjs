// bench.mjs ADDRESS [SECONDS]: uncontended acquire/release cycles per
// second with the local deadline's heartbeat (the default: a HELD
// pipelined behind each LOCK) and without it (heartbeat: false), and
// handoff latency between two holders of one key (from one's release()
// call to the other's grant), p50/p99.
import { Client } from './src/index.js';

const addr = process.argv[2] ?? '127.0.0.1:7390';
const secs = Number(process.argv[3] ?? 5);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
};
const now = () => Number(process.hrtime.bigint()) / 1e6;

const c = await Client.connect(addr);
const plain = await Client.connect(addr, { heartbeat: false });
for (const x of [c, plain]) await (await x.tryAcquire('bench-warm')).release();
// the two modes take turns, half a second at a time, so that both see the same machine
const cycles = new Map([[c, 0], [plain, 0]]);
for (let s = 0; s < secs; s++) {
  for (const x of [c, plain]) {
    const end = now() + 500;
    while (now() < end) {
      const l = await x.acquire('bench-node');
      await l.release();
      cycles.set(x, cycles.get(x) + 1);
    }
  }
}
console.log(`node        : ${(cycles.get(c) / (secs / 2)).toFixed(0).padStart(8)} lock/unlock cycles/s (uncontended, heartbeat on: the default)`);
console.log(`node        : ${(cycles.get(plain) / (secs / 2)).toFixed(0).padStart(8)} lock/unlock cycles/s (uncontended, heartbeat: false)`);
await plain.close();

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
