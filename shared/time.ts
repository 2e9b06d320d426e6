/** Timestamps in the API are integer Unix seconds (UTC). */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
