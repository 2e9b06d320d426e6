import { ensureTables, startDynalite } from '../infra/local/dynamodb.js';
import { config } from '../shared/config.js';
import { attachmentsTable, conversationsTable, idempotencyTable, uploadSessionsTable } from '../shared/dynamo/tables.js';
import { announceReady } from './processes.js';

// DynamoDB for the bench: dynalite in memory, in a process of its own, with the tables the code defines.
const dynamodb = await startDynalite('127.0.0.1');
const names = config();
await ensureTables(dynamodb.endpoint, names.region, {
  [names.conversationsTable]: conversationsTable,
  [names.attachmentsTable]: attachmentsTable,
  [names.idempotencyTable]: idempotencyTable,
  [names.uploadSessionsTable]: uploadSessionsTable,
});
announceReady({ endpoint: dynamodb.endpoint }, dynamodb.close);
