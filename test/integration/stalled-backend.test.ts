import { describe, expect, it } from 'vitest';
import { userFilesPrefix } from '../../shared/files/keys.js';
import { upload } from '../support/attachments.js';
import { dynamodbCall, s3Call } from '../support/fault-proxy.js';
import { faultyApiForFile } from '../support/faulty-api.js';

/**
 * A backend that takes a connection and never answers in time (the proxy
 * holds every answer for 25 s), under the real 20 s function timeout: the SDK
 * clients' request timeouts (DynamoDB 3 s, S3 10 s, then retries) and the
 * invocation's budget (shared/deadline.ts, calls until 15 s) must end the
 * request with a 503, not leave it waiting for the late answer, which would
 * outlast the function (the emulator's 502). function-timeout.test.ts covers
 * what the write protocols leave behind.
 */
const faultyApi = faultyApiForFile();

const STALL = { kind: 'stall', ms: 25_000 } as const;

describe('a stalled backend', () => {
  it('a read whose DynamoDB answers are all stalled answers 503, not the late answer', async () => {
    const f = faultyApi();
    const created = await f.t.call('stalled-reader', 'POST', '/v1/conversations', { form: { contact_id: 'slow' } });
    expect(created.status).toBe(201);
    const stalled = f.dynamodb.inject({ match: dynamodbCall('GetItem', [created.body.id]), times: 10, fault: STALL });

    const read = await f.t.call('stalled-reader', 'GET', `/v1/conversations/${created.body.id}`);
    expect(stalled.fired).toBeGreaterThan(0);
    expect(read.status).toBe(503);
    expect(read.body.error.code).toBe('service_unavailable');
  });

  it('an upload whose S3 answers are all stalled answers 503 and lists nothing', async () => {
    const f = faultyApi();
    const stalled = f.s3.inject({ match: s3Call('PUT', `/${userFilesPrefix('stalled-uploader')}`), times: 10, fault: STALL });

    const response = await upload(f.t, 'stalled-uploader', { bytes: 'never acknowledged', filename: 'slow.txt' });
    expect(stalled.fired).toBeGreaterThan(0);
    expect(response.status).toBe(503);
    f.s3.calm();
    expect((await f.t.call('stalled-uploader', 'GET', '/v1/attachments')).body.data).toEqual([]);
  });
});
