/**
 * Reads until `check` holds, for what follows an answer rather than coming
 * with it (the stream cleanup of deleted items); returns the last value read,
 * for the test to assert on, after at most `withinMs`, reading every `everyMs`.
 */
export async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, withinMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
