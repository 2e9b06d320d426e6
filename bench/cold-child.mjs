// A fresh process doing what Lambda's runtime does on a cold start: load the
// bundle, invoke its handler once. Times are performance.now(), i.e. ms since
// this process started (performance.timeOrigin), so they include Node's boot.
const started = performance.now();
const { handler } = await import(process.argv[2]);
const loaded = performance.now();
const result = await handler(JSON.parse(process.env.BENCH_EVENT));
const responded = performance.now();
// The handler logs to stdout too: the result is the line that starts with this marker.
const RESULT = 'BENCH-RESULT ';
process.stdout.write(`\n${RESULT}${JSON.stringify({ started, loaded, responded, result })}`);
