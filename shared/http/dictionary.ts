/**
 * A map from client-chosen names (headers, query and form parameters,
 * multipart fields) to values, with no prototype: a name such as
 * `__proto__`, `constructor` or `toString` is an ordinary key, never a
 * member of Object.prototype that a lookup finds or an assignment drops.
 * Every place that parses a request collects names into one of these.
 */
export type Dictionary<T> = Record<string, T>;

export const dictionary = <T>(): Dictionary<T> => Object.create(null) as Dictionary<T>;
