import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { LOCK_FILE, lockDataDirectory } from '../../infra/local/data-lock.js';
import { runDynamodb } from '../support/api.js';

/**
 * Two `npm start` on one data folder would share DynamoDB Local's database
 * file and the S3 stand-in's folder, and fail each other's writes. The second
 * is refused, naming the first; a lock left by a server that was killed is
 * taken over. The servers here are `npm start`'s own entry point
 * (infra/local/main.ts) in child processes, on the run's DynamoDB (so no JVM
 * of their own) and a data folder of the test's.
 */
const directories: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function dataDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'local-data-lock-'));
  directories.push(directory);
  return directory;
}

interface Started {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once the process ends. */
  exited: Promise<number | string>;
}

function npmStart(directory: string): Started {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPOSITORY_ROOT, 'infra/local/main.ts')], {
    cwd: REPOSITORY_ROOT,
    env: { ...process.env, DATA_DIRECTORY: directory, PORT: '0', DYNAMODB_ENDPOINT: runDynamodb(), LOCAL_STREAM_CONSUMERS: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return { child, output: () => output, exited };
}

/** Resolves once the server says where it listens; fails if it exits first. */
async function listening(started: Started): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (started.output().includes('listening on http://')) {
        started.child.stdout!.off('data', check);
        resolve();
      }
    };
    started.child.stdout!.on('data', check);
    check();
    void started.exited.then((code) => reject(new Error(`server exited (${code}) before it listened:\n${started.output()}`)));
  });
}

const holderOf = (directory: string) => JSON.parse(readFileSync(join(directory, LOCK_FILE), 'utf8')).pid as number;

describe('npm start on a data folder another npm start serves', () => {
  it('refuses with the holding process id and exits non-zero', async () => {
    const directory = dataDirectory();
    const first = npmStart(directory);
    await listening(first);
    expect(holderOf(directory)).toBe(first.child.pid);

    const second = npmStart(directory);
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`The data folder ${directory} is in use by process ${first.child.pid}`);
    expect(second.output()).not.toContain('listening on');
    // The first one still holds it and still serves.
    expect(holderOf(directory)).toBe(first.child.pid);
    expect(first.child.exitCode).toBeNull();

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(existsSync(join(directory, LOCK_FILE))).toBe(false);
  });

  it('takes over the lock of a server that was killed', async () => {
    const directory = dataDirectory();
    const killed = npmStart(directory);
    await listening(killed);
    killed.child.kill('SIGKILL');
    expect(await killed.exited).toBe('SIGKILL');
    // Left behind, naming a process that is gone.
    expect(holderOf(directory)).toBe(killed.child.pid);

    const next = npmStart(directory);
    await listening(next);
    expect(holderOf(directory)).toBe(next.child.pid);
    expect(next.output()).toContain(`from process ${killed.child.pid}, which ended without releasing it`);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  });
});

describe('lockDataDirectory', () => {
  it('refuses a second claim from the same process, and frees the folder on release', () => {
    const directory = dataDirectory();
    const lock = lockDataDirectory(directory);
    expect(() => lockDataDirectory(directory)).toThrow(`in use by process ${process.pid}`);
    lock.release();
    lockDataDirectory(directory).release();
    expect(existsSync(join(directory, LOCK_FILE))).toBe(false);
  });

  it('takes over a lock file that names no process', () => {
    const directory = dataDirectory();
    writeFileSync(join(directory, LOCK_FILE), '');
    const lock = lockDataDirectory(directory);
    expect(holderOf(directory)).toBe(process.pid);
    lock.release();
  });
});
