import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BusEnvelope } from '../shared/events/bus.js';

/**
 * What an operator's rule target would be, on loopback: takes each
 * EventBridge envelope the local server POSTs to EVENTS_FORWARD_URL, answers
 * 204 at once, and keeps when each event arrived (performance.now() of this
 * process), by the request that caused it (the event's request_id).
 */
export interface EventReceiver {
  url: string;
  /** Envelopes taken so far, repeats included. */
  received(): number;
  /** When the event of `requestId` first arrived; waits for it until `deadlineMs` passes. */
  arrival(requestId: string, deadlineMs: number): Promise<number>;
  close(): Promise<void>;
}

const POLL_MS = 2;

export async function eventReceiver(): Promise<EventReceiver> {
  const arrivals = new Map<string, number>();
  let received = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      received += 1;
      const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as BusEnvelope;
      const requestId = envelope.detail.request_id;
      if (typeof requestId === 'string' && !arrivals.has(requestId)) arrivals.set(requestId, at);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    received: () => received,
    async arrival(requestId, deadlineMs) {
      const started = performance.now();
      for (;;) {
        const at = arrivals.get(requestId);
        if (at !== undefined) return at;
        if (performance.now() - started > deadlineMs) throw new Error(`No envelope for request ${requestId} after ${deadlineMs} ms`);
        // A short poll: the arrival time is the receiver's, taken when the POST came, not when this loop looks.
        await sleep(POLL_MS);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
