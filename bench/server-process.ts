import { startLocalApi } from '../infra/local/server.js';
import { announceReady } from './processes.js';

// The local API (gateway emulator and the real handlers) against the backends the bench started. Without the
// stream consumers unless the bench asks for them (BENCH_STREAM_CONSUMERS=on: the sharing part, whose fan-out
// runs from the stream poller): the other figures measure the handlers, and the counting proxies count their
// requests only. The bench's S3 is a stand-in of ours (s3-process.ts), handed over as configuration, so the
// functions sign with their own keys and it answers each as its role, as the DynamoDB calls are (local IAM).
const api = await startLocalApi({
  port: 0,
  env: {
    DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
    S3_ENDPOINT: process.env.S3_ENDPOINT!,
    LOCAL_STREAM_CONSUMERS: process.env.BENCH_STREAM_CONSUMERS === 'on' ? 'on' : 'off',
  },
});
announceReady({ url: api.url, pid: process.pid }, api.close);
