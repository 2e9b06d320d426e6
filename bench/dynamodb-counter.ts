import { createServer, request as forward, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * A loopback proxy in front of DynamoDB that counts the operations passing
 * through it by name (X-Amz-Target), whatever the endpoint reports: for
 * transactions and batch writes also their items (`TransactWriteItemsItems`,
 * `BatchWriteItemItems`), for queries and scans the items they read
 * (`QueryItemsRead`, `ScanItemsRead`: DynamoDB's ScannedCount), for stream
 * reads the records they brought (`GetRecordsRecords`), and calls
 * DynamoDB refused (`<operation>Refused`: a failed condition is one, and
 * still costs its write unit on AWS).
 */
export interface DynamoCounter {
  endpoint: string;
  counts(): Record<string, number>;
  reset(): void;
  close(): Promise<void>;
}

/** Operations whose answer says how many items they read, and how to count them from it. */
const READS_ITEMS: Record<string, (answer: { ScannedCount?: number; Records?: unknown[] }) => [string, number]> = {
  Query: (answer) => ['QueryItemsRead', answer.ScannedCount ?? 0],
  Scan: (answer) => ['ScanItemsRead', answer.ScannedCount ?? 0],
  GetRecords: (answer) => ['GetRecordsRecords', answer.Records?.length ?? 0],
};

export async function countingProxy(target: string): Promise<DynamoCounter> {
  const upstream = new URL(target);
  let counts: Record<string, number> = {};
  const add = (name: string, count = 1) => {
    counts[name] = (counts[name] ?? 0) + count;
  };
  const server: Server = createServer((incoming, outgoing) => {
    const operation = String(incoming.headers['x-amz-target'] ?? 'unknown')
      .split('.')
      .pop()!;
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      add(operation);
      if (operation === 'TransactWriteItems')
        add('TransactWriteItemsItems', (JSON.parse(body.toString('utf8')) as { TransactItems: unknown[] }).TransactItems.length);
      if (operation === 'BatchWriteItem') {
        const requests = (JSON.parse(body.toString('utf8')) as { RequestItems: Record<string, unknown[]> }).RequestItems;
        add(
          'BatchWriteItemItems',
          Object.values(requests).reduce((sum, items) => sum + items.length, 0),
        );
      }
      const proxied = forward(
        { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
        (answer) => {
          const status = answer.statusCode ?? 500;
          if (status >= 400) add(`${operation}Refused`);
          const itemsOf = READS_ITEMS[operation];
          if (!itemsOf || status >= 400) {
            outgoing.writeHead(status, answer.headers);
            answer.pipe(outgoing);
            return;
          }
          // The answer is read whole (a page is at most 1 MB) to count what it read, then passed on as it came.
          const parts: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => parts.push(chunk));
          answer.on('end', () => {
            const bytes = Buffer.concat(parts);
            const text = (answer.headers['content-encoding'] === 'gzip' ? gunzipSync(bytes) : bytes).toString('utf8');
            add(...itemsOf(JSON.parse(text) as Parameters<typeof itemsOf>[0]));
            outgoing.writeHead(status, answer.headers);
            outgoing.end(bytes);
          });
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
