/**
 * Timestamps in the API are integer Unix seconds (UTC). Every service reads
 * the time through `clock`: the expiry tests move it forward instead of
 * sleeping, without faking Date, which the AWS SDKs, token checks and the
 * local stand-ins read for their own purposes (signatures, skew checks).
 */
export const clock = { nowMs: (): number => Date.now() };

export const nowSeconds = (): number => Math.floor(clock.nowMs() / 1000);
