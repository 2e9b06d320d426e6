import { randomBytes } from 'node:crypto';
import type { Composition } from '../shared/app.js';
import type { CostFigure } from './cost.js';
import { eventReceiver } from './event-receiver.js';
import { type FeedPages, measureFeedPages } from './feed-pages.js';
import { type ForwardLatency, measureForwardLatency } from './forward-latency.js';
import { Api, localServer } from './local-api.js';

/**
 * The events feed on the local server: how soon a committed write's event
 * reaches a receiver at EVENTS_FORWARD_URL (a server with its stream
 * consumers and the forwarder), and what a page of the feed reads (a server
 * without them, so that only the page's calls are counted). What the outbox
 * adds to each write's cost is measured with the cost table (cost.ts).
 * The fan-out's events (another member's feed after a shared upload) are
 * not measured here.
 */
export interface EventSettings {
  /** API writes whose event is timed to the receiver, over `forwardUsers` users. */
  forwardWrites: number;
  forwardUsers: number;
  /** Writes that make the feed whose pages are read. */
  feedWrites: number;
}

export interface EventFigures {
  forwarding: ForwardLatency;
  feedPages: FeedPages;
  /** The events table's share of each endpoint's cost, from the cost part when it ran too (CostFigure.outbox). */
  outbox?: ({ endpoint: string } & CostFigure['outbox'])[];
}

export async function measureEvents(
  composition: Composition,
  backends: { DYNAMODB_ENDPOINT: string; S3_ENDPOINT: string },
  authSecret: string,
  settings: EventSettings,
  step: (message: string) => void,
): Promise<EventFigures> {
  // Names of this run's users: a second run on the same DynamoDB (--only) never meets the first's.
  const run = randomBytes(3).toString('hex');
  const receiver = await eventReceiver();
  let forwarding: ForwardLatency;
  try {
    const forwarder = await localServer(backends, authSecret, { consumers: true, eventsForwardUrl: receiver.url });
    try {
      step(
        `events: commit to forward over ${settings.forwardWrites} writes of ${settings.forwardUsers} users (the backlog of the parts before forwarded first)`,
      );
      forwarding = await measureForwardLatency(
        new Api(forwarder.url, authSecret),
        receiver,
        run,
        settings.forwardWrites,
        settings.forwardUsers,
      );
    } finally {
      await forwarder.stop();
    }
  } finally {
    await receiver.close();
  }
  const reader = await localServer(backends, authSecret, { consumers: false });
  try {
    step(`events: a feed of ${settings.feedWrites} writes, items read per page`);
    const feedPages = await measureFeedPages(composition, new Api(reader.url, authSecret), reader.counter, run, settings.feedWrites);
    return { forwarding, feedPages };
  } finally {
    await reader.stop();
  }
}
