import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LOCAL_ACCOUNT } from '../infra/local/gateway.js';
import { localIam, SCAN_TIMER_QUEUE_NAME, THREAD_SETTLING_QUEUE_NAME, tablesOf } from '../infra/local/iam.js';
import { localSqs, startLocalQueue } from '../infra/local/queue.js';
import { attachRealtime, type LocalRealtime } from '../infra/local/realtime.js';
import { readConfig } from '../shared/config.js';
import { REALTIME_PATH } from '../shared/realtime/channel.js';
import { LOCAL_ENV } from './processes.js';

/**
 * What a first request reaches beyond DynamoDB and S3: the Event API's stand-in (the publisher's hints; no
 * client connects), the scan timers' queue (the fan-out starts a pending file's timer) and the settling timers'
 * queue (a group's switch starts its timer); nothing consumes them.
 */
export async function startStandIns(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  let realtime: LocalRealtime | undefined;
  let sqs: ReturnType<typeof localSqs> | undefined;
  const server = createServer((request, response) => {
    if (realtime?.handleRequest(request, response) || sqs?.handleRequest(request, response)) return;
    response.writeHead(404, { 'content-length': 0 });
    response.end();
  });
  realtime = attachRealtime(server, {
    authorizer: async () => ({ isAuthorized: false, ttlOverride: 0 }),
    region: LOCAL_ENV.AWS_REGION,
    account: LOCAL_ACCOUNT,
    secretAccessKey: LOCAL_ENV.AWS_SECRET_ACCESS_KEY,
    mayPublish: (accessKeyId) => accessKeyId === LOCAL_ENV.AWS_ACCESS_KEY_ID,
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const unconsumed = (name: string) =>
    startLocalQueue({
      name,
      region: LOCAL_ENV.AWS_REGION,
      account: LOCAL_ACCOUNT,
      url: `http://${host}/${LOCAL_ACCOUNT}/${name}`,
      iam: localIam(
        { accessKeyId: LOCAL_ENV.AWS_ACCESS_KEY_ID },
        { account: LOCAL_ACCOUNT, region: LOCAL_ENV.AWS_REGION, tables: tablesOf(readConfig({})), bucket: readConfig({}).filesBucket },
      ),
      baseKeyId: LOCAL_ENV.AWS_ACCESS_KEY_ID,
      handler: async () => ({ batchItemFailures: [] }),
      batchSize: 10,
      maxDeliveries: 1,
      visibilityMs: 60_000,
      functionTimeoutMs: 60_000,
    });
  const scanTimers = unconsumed(SCAN_TIMER_QUEUE_NAME);
  const threadSettling = unconsumed(THREAD_SETTLING_QUEUE_NAME);
  sqs = localSqs([scanTimers, threadSettling]);
  return {
    env: {
      REALTIME_URL: `ws://${host}${REALTIME_PATH}`,
      REALTIME_HOST: host,
      SCAN_TIMER_QUEUE_URL: scanTimers.url,
      THREAD_SETTLING_QUEUE_URL: threadSettling.url,
    },
    async close() {
      await scanTimers.stop();
      await threadSettling.stop();
      await realtime?.close();
      await new Promise<void>((closed) => server.close(() => closed()));
    },
  };
}
