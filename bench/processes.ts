import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { REPOSITORY_ROOT } from '../infra/local/server.js';
import { Composition } from '../shared/app.js';
import { readConfig } from '../shared/config.js';

/**
 * The backends and the server run in processes of their own, as they do in
 * AWS: the load the bench generates, the API and DynamoDB never share a thread.
 */
export interface BackendProcess<Info> {
  info: Info;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Environment every local process gets: loopback credentials, no SDK version nag. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/** The Composition (clients, stores, services) of the bench process itself, on the backends the bench started. */
export function benchApp(backends: {
  DYNAMODB_ENDPOINT: string;
  S3_ENDPOINT: string;
  SCAN_TIMER_QUEUE_URL?: string;
  THREAD_SETTLING_QUEUE_URL?: string;
}): Composition {
  return new Composition({ ...readConfig({ ...LOCAL_ENV, ...backends }), credentials: LOCAL_CREDENTIALS });
}

export const LOCAL_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/**
 * Starts `bench/<script>` under tsx and waits for the JSON line it prints
 * once ready. `onLogLine`: each line the process logs (stdout), for a part
 * that reads the handlers' request lines.
 */
export async function startProcess<Info>(
  script: string,
  env: Record<string, string> = {},
  nodeOptions: string[] = [],
  onLogLine?: (line: string) => void,
): Promise<BackendProcess<Info>> {
  // The handlers' logs (stdout) are written and dropped, as cheaply as Lambda's log pipe takes them, unless a part reads
  // them; readiness comes on a channel of its own (fd 3).
  const child = spawn(process.execPath, [...nodeOptions, '--import', 'tsx', join(REPOSITORY_ROOT, 'bench', script)], {
    cwd: REPOSITORY_ROOT,
    env: { ...process.env, ...LOCAL_ENV, ...env },
    stdio: ['ignore', onLogLine ? 'pipe' : 'ignore', 'inherit', 'pipe'],
  });
  if (onLogLine) createInterface({ input: child.stdout! }).on('line', onLogLine);
  const lines = createInterface({ input: child.stdio[3] as Readable });
  const ready = new Promise<Info>((resolve, reject) => {
    lines.once('line', (line) => resolve(JSON.parse(line) as Info));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
  const info = await ready;
  return {
    info,
    child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** For the child side: announce readiness and close cleanly on SIGTERM. */
export function announceReady(info: unknown, close: () => Promise<void>): void {
  writeSync(3, `${JSON.stringify(info)}\n`);
  process.once('SIGTERM', () => {
    void close().then(() => process.exit(0));
  });
}
