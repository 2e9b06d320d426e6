import type { IncomingMessage } from 'node:http';

/** A request's headers as sent: each name (its case kept) with each of its values, in order (Node lists them as name, value, name, value…). */
export function* rawHeaderPairs(request: IncomingMessage): Generator<[name: string, value: string]> {
  const raw = request.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const [name, value] = [raw[index], raw[index + 1]];
    if (name !== undefined && value !== undefined) yield [name, value];
  }
}
