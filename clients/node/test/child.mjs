// A holder in a process of its own, for the cross-process exclusion test:
// child.mjs ADDRESS KEY ROUNDS LOGFILE COUNTERFILE ID
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { Client } from '../src/index.js';

const [addr, key, rounds, log, counter, id] = process.argv.slice(2);
const c = await Client.connect(addr);
try {
  for (let i = 0; i < Number(rounds); i++) {
    await c.using(key, { wait: 60000 }, async (signal, lock) => {
      appendFileSync(log, `enter ${lock.fence} ${id}\n`);
      const v = Number(readFileSync(counter, 'utf8'));
      await new Promise((r) => setTimeout(r, 3));
      writeFileSync(counter, String(v + 1));
      appendFileSync(log, `exit ${lock.fence} ${id}\n`);
    });
  }
} finally {
  await c.close();
}
