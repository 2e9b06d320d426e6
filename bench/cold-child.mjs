// A fresh process doing what Lambda's runtime does on a cold start: load the
// bundle, invoke its handler once. Times are performance.now(), i.e. ms since
// this process started (performance.timeOrigin), so they include Node's boot.
const started = performance.now();
const { handler } = await import(process.argv[2]);
const loaded = performance.now();
const result = await handler(JSON.parse(process.env.BENCH_EVENT));
const responded = performance.now();
process.stdout.write(JSON.stringify({ started, loaded, responded, result }));
