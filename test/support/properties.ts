/**
 * The seed of a property test: PROPERTY_SEED from the environment when set
 * (.ci/run picks one per run and prints it), else the file's own. fast-check
 * names the seed and path of a failure, which replays it with PROPERTY_SEED.
 */
export function propertySeed(fallback: number): number {
  const chosen = process.env.PROPERTY_SEED;
  if (chosen === undefined || chosen === '') return fallback;
  const seed = Number(chosen);
  // fast-check takes a 32-bit seed: anything else would run, and be printed, as another number.
  if (!Number.isInteger(seed) || seed !== (seed | 0))
    throw new Error(`PROPERTY_SEED must be a 32-bit integer, not ${JSON.stringify(chosen)}`);
  return seed;
}

/**
 * A property's parameters: `numRuns` runs, every one of them. Past `withinMs`
 * fast-check stops and reports a failure (with the seed) rather than passing
 * on the runs it made and dropping the one in progress, failed or not: size
 * it for a loaded machine, and keep the test's timeout above it.
 */
export function propertyRuns(fallbackSeed: number, numRuns: number, withinMs: number) {
  return { seed: propertySeed(fallbackSeed), numRuns, interruptAfterTimeLimit: withinMs, markInterruptAsFailure: true } as const;
}
