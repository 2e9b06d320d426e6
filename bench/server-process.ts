import { startLocalApi } from '../infra/local/server.js';
import { announceReady } from './processes.js';

// The local API (gateway emulator and the real handlers) against the backends the bench started.
const api = await startLocalApi({ port: 0, env: { DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT! } });
announceReady({ url: api.url }, api.close);
