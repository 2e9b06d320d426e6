import { startLocalApi } from '../../infra/local/server.js';

/**
 * The local server in a child process, so that a test can read everything it
 * prints. It reports where it listens over IPC, never on stdout, so that its
 * output is only the server's own.
 */
const { DYNAMODB_ENDPOINT: endpoint, SHARED_DYNAMODB_ENDPOINT: shared, SHARED_TABLE_PREFIX: tablePrefix } = process.env;
const api = await startLocalApi({
  port: 0,
  ...(endpoint ? { env: { DYNAMODB_ENDPOINT: endpoint } } : {}),
  ...(shared && tablePrefix ? { sharedDynamodb: { endpoint: shared, tablePrefix } } : {}),
});
process.send!({ url: api.url, dynamodbEndpoint: api.dynamodbEndpoint, conversationsTable: api.config.conversationsTable });
process.on('disconnect', () => void api.close().then(() => process.exit(0)));
