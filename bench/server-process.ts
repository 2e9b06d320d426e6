import { startLocalApi } from '../infra/local/server.js';
import { announceReady } from './processes.js';

// The local API (gateway emulator and the real handlers) against the backends the bench started. Without the
// stream consumers: the figures measure the handlers, and the counting proxies count their requests only.
const api = await startLocalApi({ port: 0, env: { DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!, LOCAL_STREAM_CONSUMERS: 'off' } });
announceReady({ url: api.url }, api.close);
