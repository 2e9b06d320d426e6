import { createServer, request as forward, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback proxy in front of DynamoDB that counts the operations passing
 * through it by name (X-Amz-Target) and, for transactions, their items: what
 * the upload session calls cost in requests, whatever the endpoint reports.
 */
export interface DynamoCounter {
  endpoint: string;
  counts(): Record<string, number>;
  reset(): void;
  close(): Promise<void>;
}

export async function countingProxy(target: string): Promise<DynamoCounter> {
  const upstream = new URL(target);
  let counts: Record<string, number> = {};
  const server: Server = createServer((incoming, outgoing) => {
    const operation = String(incoming.headers['x-amz-target'] ?? 'unknown').split('.').pop()!;
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      counts[operation] = (counts[operation] ?? 0) + 1;
      if (operation === 'TransactWriteItems') {
        const items = (JSON.parse(body.toString('utf8')) as { TransactItems: unknown[] }).TransactItems.length;
        counts.TransactWriteItemsItems = (counts.TransactWriteItemsItems ?? 0) + items;
      }
      const proxied = forward(
        { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 500, answer.headers);
          answer.pipe(outgoing);
        },
      );
      proxied.on('error', () => outgoing.destroy());
      proxied.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts: () => ({ ...counts }),
    reset: () => {
      counts = {};
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
