import { setTimeout as sleep } from 'node:timers/promises';
import type { EventReceiver } from './event-receiver.js';
import type { Api, User } from './local-api.js';
import { type Spread, spread } from './stats.js';

/**
 * Commit to forward: how long after an API write's 2xx (its transaction,
 * event included, has committed) the event's envelope reaches a receiver at
 * EVENTS_FORWARD_URL, on the local server (the stream poller reads the
 * events table's stream and the forwarder POSTs each new event). One write
 * at a time, each a mute toggle (one conversation.updated), the users in
 * turn; the next write waits for the envelope of the one before, so each
 * figure is one event's way alone, not a queue's, and then for a random
 * pause, so that writes land anywhere in the stream poller's cycle rather
 * than always just after its last read.
 */
export interface ForwardLatency extends Spread {
  writes: number;
  users: number;
  /** Envelopes the receiver took in all, the backlog of the parts before included (the forwarder starts at the stream's oldest record). */
  envelopesReceived: number;
}

/** The backlog of earlier parts (a full run leaves a few thousand events) is forwarded first, one POST at a time. */
const CATCH_UP_MS = 300_000;
const DEADLINE_MS = 60_000;
/** Longer than the poller's idle interval (100 ms), so the pause does not fall into step with it. */
const MAX_PAUSE_MS = 250;

export async function measureForwardLatency(
  api: Api,
  receiver: EventReceiver,
  run: string,
  writes: number,
  userCount: number,
): Promise<ForwardLatency> {
  const users: { user: User; conversationId: string }[] = [];
  let lastRequest: string | undefined;
  for (let index = 0; index < userCount; index += 1) {
    const user = await api.user(`forward-${run}-${index}`);
    const answer = await api.call(
      user,
      'POST',
      '/v1/conversations',
      new URLSearchParams({ contact_id: `forward-contact-${run}-${index}` }),
    );
    if (answer.status !== 201) throw new Error(`POST /v1/conversations as ${user.id}: ${answer.status} ${JSON.stringify(answer.json)}`);
    users.push({ user, conversationId: answer.json.id as string });
    lastRequest = answer.requestId!;
  }
  // The stream is read in order: once the last setup write's event is in, everything written before it is.
  await receiver.arrival(lastRequest!, CATCH_UP_MS);

  const sample: number[] = [];
  for (let index = 0; index < writes; index += 1) {
    await sleep(Math.random() * MAX_PAUSE_MS);
    const { user, conversationId } = users[index % users.length]!;
    // Each user's writes alternate, so every one changes the conversation and records one event.
    const muted = Math.floor(index / users.length) % 2 === 0;
    const answer = await api.call(user, 'PUT', `/v1/conversations/${conversationId}`, new URLSearchParams({ is_muted: String(muted) }));
    const committedAt = performance.now();
    if (answer.status !== 200 || !answer.requestId)
      throw new Error(`PUT /v1/conversations/${conversationId}: ${answer.status} ${JSON.stringify(answer.json)}`);
    sample.push((await receiver.arrival(answer.requestId, DEADLINE_MS)) - committedAt);
  }
  return { writes, users: userCount, ...spread(sample), envelopesReceived: receiver.received() };
}
