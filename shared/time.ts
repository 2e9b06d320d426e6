/** Timestamps in the API are integer Unix seconds (UTC). */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/**
 * Where "now" comes from, in Unix seconds. Injected (composition root, local
 * server option) wherever a rule depends on the time of the request, so tests
 * move time forward instead of sleeping.
 */
export type Clock = () => number;

export const systemClock: Clock = nowSeconds;
