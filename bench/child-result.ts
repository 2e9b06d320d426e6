/** The result a bench child printed after its marker; the handler's own log lines around it are skipped. */
export function childResult<T>(stdout: string): T {
  const line = stdout.split('\n').find((candidate) => candidate.startsWith('BENCH-RESULT '));
  if (!line) throw new Error(`The child printed no result: ${stdout.slice(-500)}`);
  return JSON.parse(line.slice('BENCH-RESULT '.length)) as T;
}
