import { ensureTables, stackTablesNamed, startDynamoDbLocal } from '../infra/local/dynamodb.js';
import { readConfig } from '../shared/config.js';
import { byTableRole } from '../shared/dynamo/tables.js';
import { announceReady, LOCAL_CREDENTIALS } from './processes.js';

// DynamoDB for the bench: DynamoDB Local in memory (its own JVM), with the tables the code defines.
const dynamodb = await startDynamoDbLocal('127.0.0.1');
const names = readConfig(process.env);
await ensureTables(dynamodb.endpoint, names.region, LOCAL_CREDENTIALS, stackTablesNamed(byTableRole((role) => names[`${role}Table`])));
announceReady({ endpoint: dynamodb.endpoint }, dynamodb.close);
