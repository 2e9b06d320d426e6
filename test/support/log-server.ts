import { startLocalApi } from '../../infra/local/server.js';

/**
 * The local server in a child process, so that a test can read everything it
 * prints. It reports where it listens over IPC, never on stdout, so that its
 * output is only the server's own.
 */
const endpoint = process.env.DYNAMODB_ENDPOINT;
const api = await startLocalApi({ port: 0, env: endpoint ? { DYNAMODB_ENDPOINT: endpoint } : {} });
process.send!({ url: api.url, dynamodbEndpoint: api.dynamodbEndpoint });
process.on('disconnect', () => void api.close().then(() => process.exit(0)));
