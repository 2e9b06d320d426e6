import { type Check, CheckSkipped, expect } from '../check.js';
import { describe } from '../client.js';

/**
 * The event feed: every attachment the run uploaded so far is an
 * `attachment.created` in the user's feed (written in the upload's own
 * transaction, so it is there as soon as the upload answered), found by
 * type, and read back by id.
 */
export const eventFeed: Check = {
  name: 'read the event feed',
  async run({ client, user, made }) {
    const uploaded = [...made.attachments.keys()];
    if (uploaded.length === 0) throw new CheckSkipped('no attachment (the upload checks failed)');
    const listed = await client.call(user.token, 'GET', '/v1/events?type=attachment.created&limit=100');
    expect(listed.status === 200 && Array.isArray(listed.body?.data), `GET /v1/events?type=attachment.created: ${describe(listed)}`);
    const events = listed.body.data as { id: string; type: string; data: { object: { id: string } } }[];
    const missing = uploaded.filter((id) => !events.some((event) => event.data?.object?.id === id));
    expect(missing.length === 0, `no attachment.created for ${missing.join(', ')} among the ${events.length} newest`);
    const [newest] = events;
    expect(newest !== undefined, 'GET /v1/events?type=attachment.created listed none');
    const read = await client.call(user.token, 'GET', `/v1/events/${newest.id}`);
    expect(
      read.status === 200 && read.body?.id === newest.id && read.body?.type === 'attachment.created',
      `GET /v1/events/${newest.id}: ${describe(read)}`,
    );
    return `${uploaded.length} attachment.created, ${newest.id} read by id`;
  },
};
