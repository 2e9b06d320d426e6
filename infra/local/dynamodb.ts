import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import type { TableDefinition } from '../../shared/dynamo/tables.js';

/** DynamoDB in this process (dynalite on loopback), persisted under `directory` when given; port 0 picks a free one. */
export async function startDynalite(host: string, directory?: string, port = 0): Promise<{ endpoint: string; close(): Promise<void> }> {
  if (directory) mkdirSync(directory, { recursive: true });
  const server = dynalite({ ...(directory ? { path: directory } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    endpoint: `http://${host}:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Creates the tables as the code queries them, unless they exist. */
export async function ensureTables(endpoint: string, region: string, tables: Record<string, TableDefinition>): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    for (const [name, table] of Object.entries(tables)) {
      const keys = new Set([table.partitionKey, table.sortKey, ...table.indexes.flatMap((i) => [i.partitionKey, i.sortKey])]);
      try {
        await client.send(
          new CreateTableCommand({
            TableName: name,
            BillingMode: 'PAY_PER_REQUEST',
            AttributeDefinitions: [...keys].map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
            KeySchema: [
              { AttributeName: table.partitionKey, KeyType: 'HASH' },
              { AttributeName: table.sortKey, KeyType: 'RANGE' },
            ],
            ...(table.indexes.length > 0
              ? {
                  GlobalSecondaryIndexes: table.indexes.map((index) => ({
                    IndexName: index.name,
                    KeySchema: [
                      { AttributeName: index.partitionKey, KeyType: 'HASH' },
                      { AttributeName: index.sortKey, KeyType: 'RANGE' },
                    ],
                    Projection: { ProjectionType: 'ALL' },
                  })),
                }
              : {}),
          }),
        );
      } catch (error) {
        if (!(error instanceof ResourceInUseException)) throw error;
      }
    }
  } finally {
    client.destroy();
  }
}
