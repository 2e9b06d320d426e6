import { createServer, request as forward, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP proxy in front of a backend that drops the requests a
 * test chooses (the connection is cut before or after the backend did the
 * work), so a test can fail one step of a protocol and then let it recover.
 */
export interface FailingProxy {
  endpoint: string;
  /** Requests matching this are cut; `after`: the backend did the work, the answer is lost. */
  failWhen(match: ((request: IncomingMessage) => boolean) | undefined, when?: 'before' | 'after'): void;
  close(): Promise<void>;
}

export async function failingProxy(target: string): Promise<FailingProxy> {
  const upstream = new URL(target);
  let match: ((request: IncomingMessage) => boolean) | undefined;
  let when: 'before' | 'after' = 'before';
  const server: Server = createServer((incoming, outgoing) => {
    const failing = match?.(incoming) ?? false;
    if (failing && when === 'before') {
      incoming.resume();
      outgoing.socket?.destroy();
      return;
    }
    const proxied = forward(
      { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        if (failing) {
          answer.resume();
          answer.on('end', () => outgoing.socket?.destroy());
          return;
        }
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    proxied.on('error', () => outgoing.socket?.destroy());
    incoming.pipe(proxied);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    failWhen(next, at = 'before') {
      match = next;
      when = at;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
