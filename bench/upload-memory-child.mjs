// Peak memory of the upload handler for one upload, in a fresh process as on
// Lambda. After a small warm-up upload and a full GC, the kernel's peak-RSS
// mark is reset (/proc/self/clear_refs, Linux), so VmHWM afterwards is the
// peak of this upload alone: reading the invocation payload as the runtime
// receives it (JSON text), parsing it, and the handler's work.
import { readFileSync, writeFileSync } from 'node:fs';

const statusKiB = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))[1]);
const { handler } = await import(process.argv[2]);
const warmUp = await handler(JSON.parse(readFileSync(process.argv[3], 'utf8')));
globalThis.gc();
writeFileSync('/proc/self/clear_refs', '5');
const idleKiB = statusKiB('VmRSS');
const event = JSON.parse(readFileSync(process.argv[4], 'utf8'));
const payloadKiB = statusKiB('VmHWM');
const result = await handler(event);
const peakKiB = statusKiB('VmHWM');
// The handler logs to stdout too: the result is the line that starts with this marker.
const RESULT = 'BENCH-RESULT ';
process.stdout.write(
  `\n${RESULT}${JSON.stringify({ idleKiB, payloadKiB, peakKiB, warmUpStatus: warmUp.statusCode, status: result.statusCode })}`,
);
