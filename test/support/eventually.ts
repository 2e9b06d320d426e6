import { inspect } from 'node:util';

/**
 * Reads until `check` holds, for what follows an answer rather than coming
 * with it (the stream cleanup of deleted items), and returns that value; after
 * `withinMs` without it, throws with the last value read, so a wait whose
 * result nobody asserts still fails. Reads every `everyMs`.
 */
export async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, withinMs = 20_000, everyMs = 100): Promise<T> {
  const { value, held } = await poll(read, check, withinMs, everyMs);
  if (held) return value;
  throw new Error(`Not so within ${withinMs} ms; last read: ${inspect(value, { depth: 6, maxArrayLength: 20, maxStringLength: 500 })}`);
}

/**
 * Waits, then looks: reads until `check` holds or `withinMs` has passed and
 * returns the last value either way, for a caller that asserts on it itself
 * (an audit whose violations it reports better than a dump would).
 */
export async function waitThenLook<T>(read: () => Promise<T>, check: (value: T) => boolean, withinMs = 20_000, everyMs = 100): Promise<T> {
  return (await poll(read, check, withinMs, everyMs)).value;
}

async function poll<T>(read: () => Promise<T>, check: (value: T) => boolean, withinMs: number, everyMs: number) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (check(value)) return { value, held: true };
    if (Date.now() > deadline) return { value, held: false };
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
