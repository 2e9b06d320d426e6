import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file that says which process serves a data directory. */
export const LOCK_FILE = 'server.lock';

interface Holder {
  pid: number;
  started_at: string;
}

export interface DataLock {
  /** The process whose stale lock was taken over (it had died without releasing it). */
  takenOverFrom?: number;
  release(): void;
}

/**
 * Another live process holds the data directory: two DynamoDB Locals on one
 * database file fail each other's writes (InternalFailure), and two S3
 * stand-ins on one folder do the same to files.
 */
export class DataDirectoryInUse extends Error {
  override name = 'DataDirectoryInUse';
  constructor(
    readonly directory: string,
    readonly pid: number,
    startedAt: string,
  ) {
    super(
      `The data folder ${directory} is in use by process ${pid} (a local server started ${startedAt}). ` +
        `Stop that server, or give this one a folder and port of its own: DATA_DIRECTORY=<folder> PORT=<port> npm start. ` +
        `If process ${pid} is no local server (its id was reused), delete ${join(directory, LOCK_FILE)}.`,
    );
  }
}

/**
 * Claims `directory` for this process, or throws DataDirectoryInUse naming
 * the live process that holds it. The lock is a file holding the holder's
 * pid, created whole and atomically (link of a written file: never seen
 * half-written). A server that crashed or was killed leaves it behind; its
 * pid is then dead and the next server takes it over. A pid reused by an
 * unrelated process makes the lock look live: the message says what to delete.
 */
export function lockDataDirectory(directory: string): DataLock {
  mkdirSync(directory, { recursive: true });
  const lock = join(directory, LOCK_FILE);
  const mine = join(directory, `${LOCK_FILE}.${process.pid}`);
  writeFileSync(mine, JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() } satisfies Holder));
  let takenOverFrom: number | undefined;
  try {
    for (;;) {
      try {
        linkSync(mine, lock);
        return { ...(takenOverFrom === undefined ? {} : { takenOverFrom }), release: () => releaseIfMine(lock) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = readHolder(lock);
      if (holder === 'gone') continue;
      if (holder !== 'unreadable' && isAlive(holder.pid)) throw new DataDirectoryInUse(directory, holder.pid, holder.started_at);
      // Stale. Moved aside atomically, so that of two servers taking it over at once only one removes it;
      // if what was moved is a live holder's (one that took it over a moment ago), it goes back.
      const aside = join(directory, `${LOCK_FILE}.stale.${process.pid}`);
      try {
        renameSync(lock, aside);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      const moved = readHolder(aside);
      if (moved !== 'gone' && moved !== 'unreadable' && isAlive(moved.pid)) {
        try {
          linkSync(aside, lock);
        } finally {
          unlinkSync(aside);
        }
        throw new DataDirectoryInUse(directory, moved.pid, moved.started_at);
      }
      unlinkSync(aside);
      if (moved !== 'gone' && moved !== 'unreadable') takenOverFrom = moved.pid;
    }
  } finally {
    unlinkSync(mine);
  }
}

function readHolder(file: string): Holder | 'gone' | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw error;
  }
  try {
    const holder = JSON.parse(text) as Partial<Holder>;
    return Number.isSafeInteger(holder.pid) && (holder.pid as number) > 0
      ? { pid: holder.pid as number, started_at: String(holder.started_at ?? 'at an unknown time') }
      : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

/** Signal 0 checks that the process exists; EPERM: it does, under another user. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function releaseIfMine(lock: string): void {
  const holder = readHolder(lock);
  if (holder !== 'gone' && holder !== 'unreadable' && holder.pid === process.pid) unlinkSync(lock);
}
