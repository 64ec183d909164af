/**
 * Throughput of `redact` (the synchronous pattern pass every event, tool result and audit line
 * goes through) on generated mixed text: code, logs, JSON, prose, with a secret every ~150 lines.
 */
import { performance } from 'node:perf_hooks';
import { redact } from '../src/redact/index.js';
import { round } from './stats.js';

export interface RedactionRow {
  mb: number;
  bytes: number;
  ms: number;
  mbPerSec: number;
  /** `[REDACTED:` markers in the output: proof the pass found the planted secrets */
  redactions: number;
  planted: number;
}

// Shapes of real secrets, assembled at run time so the source itself holds none.
const SECRETS = [
  () => 'AKIA' + 'Q3EGRQ7B2XKJ5NMT',
  () => 'ghp_' + 'x7Kq2Lm9Pz4Rt8Vw1Yb6Nc3Df5Gh0Js2Ua4Ei',
  () => 'password="' + 'hunter2-but-longer' + '"',
  () => 'eyJhbGciOiJIUzI1NiJ9' + '.eyJzdWIiOiIxMjM0NTY3ODkwIn0' + '.c2lnbmF0dXJlLXBhcnQ',
  () => 'postgres://app:' + 'S3cretPassw0rd' + '@db.internal:5432/app',
  () => 'sk_live_' + '4eC39HqLyjWDarjtT1zdp7dc',
];

const FILLER = [
  (i: number) => `export function handler${i}(req, res) { return res.status(200).json({ id: req.params.id, n: ${i} }); }`,
  (i: number) => `2024-05-0${(i % 9) + 1}T12:${String(i % 60).padStart(2, '0')}:07.123Z INFO  request ${i} served in ${i % 97} ms path=/api/items/${i}`,
  (i: number) => `{"id": ${i}, "name": "item-${i}", "tags": ["a", "b"], "price": ${(i * 1.37).toFixed(2)}, "active": true}`,
  (i: number) => `The cache for shard ${i % 16} is warmed before traffic moves; see docs/ops.md section ${i % 12}.`,
  (i: number) => `    at Object.<anonymous> (/srv/app/src/module${i % 40}.js:${i % 300}:${i % 80})`,
  (i: number) => `  - name: step-${i}\n    run: npm run build --workspace pkg${i % 9}`,
];

export function mixedText(bytes: number): { text: string; planted: number } {
  const lines: string[] = [];
  let size = 0;
  let planted = 0;
  for (let i = 0; size < bytes; i++) {
    let line = FILLER[i % FILLER.length]!(i);
    if (i % 150 === 149) {
      line += ` ${SECRETS[planted % SECRETS.length]!()}`;
      planted++;
    }
    lines.push(line);
    size += line.length + 1;
  }
  return { text: lines.join('\n'), planted };
}

export function benchRedaction(sizesMb: number[] = [1, 5], runs = 3): RedactionRow[] {
  redact(mixedText(256 * 1024).text); // warm-up: regex compilation and JIT
  return sizesMb.map((mb) => {
    const { text, planted } = mixedText(mb * 1024 * 1024);
    const times: number[] = [];
    let out = '';
    for (let r = 0; r < runs; r++) {
      const t0 = performance.now();
      out = redact(text);
      times.push(performance.now() - t0);
    }
    const ms = [...times].sort((a, b) => a - b)[Math.floor(runs / 2)]!;
    const bytes = Buffer.byteLength(text);
    return {
      mb,
      bytes,
      ms: round(ms, 1),
      mbPerSec: round(bytes / (1024 * 1024) / (ms / 1000), 1),
      redactions: out.split('[REDACTED:').length - 1,
      planted,
    };
  });
}
