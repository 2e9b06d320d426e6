import { describe, expect, it } from 'vitest';
import { fileKey } from '../../../shared/files/keys.js';
import { type RemovedSession, SessionLeftovers } from '../../../shared/uploads/leftovers.js';

/** The order of the calls is the protocol: the attachment is read before anything is removed. */
function leftovers(attached: boolean) {
  const calls: string[] = [];
  const service = new SessionLeftovers(
    {
      get: async (id) => {
        calls.push(`get ${id}`);
        return attached ? { id } : undefined;
      },
    },
    {
      abortMultipart: async (key, uploadId) => void calls.push(`abort ${key} ${uploadId}`),
      remove: async (key) => void calls.push(`remove ${key}`),
    },
  );
  return { service, calls };
}

const session: RemovedSession = { userId: 'user#1', sessionId: 'upl_1', attachmentId: 'att_1', uploadId: 'up-1' };
const key = fileKey(session.userId, session.attachmentId, session.sessionId);

describe('what a removed upload session leaves', () => {
  it('is removed, upload then object, after the attachment it was minted for is found absent', async () => {
    const { service, calls } = leftovers(false);
    expect(await service.removeUnlessAttached(session)).toBe('removed');
    expect(calls).toEqual([`get att_1`, `abort ${key} up-1`, `remove ${key}`]);
  });

  it('is kept, untouched, when that attachment exists: the session was completed and the object is its file', async () => {
    const { service, calls } = leftovers(true);
    expect(await service.removeUnlessAttached(session)).toBe('kept_for_attachment');
    expect(calls).toEqual([`get att_1`]);
  });

  it('fails with the failing call, so the stream retries the record, before anything after it runs', async () => {
    const calls: string[] = [];
    const service = new SessionLeftovers(
      { get: async () => undefined },
      {
        abortMultipart: async () => {
          throw Object.assign(new Error('S3 unreachable'), { name: 'TimeoutError' });
        },
        remove: async (k) => void calls.push(k),
      },
    );
    await expect(service.removeUnlessAttached(session)).rejects.toThrow('S3 unreachable');
    expect(calls).toEqual([]);
  });
});
