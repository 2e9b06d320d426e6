import { settingsFrom, USAGE, UsageError } from './options.js';
import { renderReport } from './report.js';
import { runSmoke } from './run.js';

// `npm run smoke -- --url <stage url>`: proves a deployed stage (or the local server) end to end, leaves nothing behind.
const settings = await settingsFrom(process.argv.slice(2), process.env).catch((error: unknown) => {
  console.error(
    error instanceof UsageError || error instanceof TypeError
      ? `${error.message}\n\n${USAGE}`
      : String(error instanceof Error ? error.message : error),
  );
  process.exit(2);
});
console.log(
  `Smoke test of ${settings.base} as ${settings.user.label}${settings.other ? ` and ${settings.other.label}` : ''} (run ${settings.marker})\n`,
);
// Ctrl-C skips the checks not yet started but not the cleanup; a second one leaves at once.
const interrupt = new AbortController();
process.once('SIGINT', () => {
  console.error('Interrupted: removing what the run made (Ctrl-C again to leave it behind)');
  interrupt.abort();
  process.once('SIGINT', () => process.exit(130));
});
const report = await runSmoke({ ...settings, signal: interrupt.signal });
console.log(renderReport(report));
process.exitCode = report.passed ? 0 : 1;
