import { attachmentUploads, type Composition, conversations, events } from '../shared/app.js';
import type { ApiEvent } from '../shared/events/model.js';
import type { DynamoCounter } from './dynamodb-counter.js';
import type { Api } from './local-api.js';
import { fileOf } from './multipart.js';
import { round } from './stats.js';

/**
 * Items read per page of GET /v1/events, against the contract's bound (a
 * page reads at most limit + 1 items): one user's feed from `writes` writes,
 * mostly conversation.updated (mute toggles) with an upload every
 * UPLOAD_EVERY writes (its attachment.created, and the conversation's
 * conversation.updated), written through the bench's own Composition (the real
 * services, so the real outbox), then read through the API of a server
 * whose DynamoDB calls are counted: the Query's ScannedCount summed over
 * the page's queries, as the conversation lists are counted (list-cost.ts).
 */
export interface FeedPageFigure {
  page: string;
  limit: number;
  /** Events of the feed the page's filter matches. */
  matching: number;
  returned: number;
  /** Items the page's queries read (ScannedCount), and how many queries. */
  itemsRead: number;
  queries: number;
}

export interface FeedPages {
  /** Events in the feed, and how many of each type. */
  events: number;
  types: Record<string, number>;
  seedSeconds: number;
  pages: FeedPageFigure[];
}

/** One upload per this many writes: attachment events are a minority of the feed. */
const UPLOAD_EVERY = 25;
/** How far behind the head the syncing client of the ending_before page is. */
const SYNC_BEHIND = 30;

export async function measureFeedPages(
  composition: Composition,
  api: Api,
  counter: DynamoCounter,
  run: string,
  writes: number,
): Promise<FeedPages> {
  const userId = `feed-${run}`;
  const started = performance.now();
  await seedFeed(composition, userId, writes);
  const seedSeconds = round((performance.now() - started) / 1000);
  const feed = await wholeFeed(composition, userId);
  const types: Record<string, number> = {};
  for (const event of feed) types[event.type] = (types[event.type] ?? 0) + 1;
  const user = await api.user(userId);

  const pages: FeedPageFigure[] = [];
  const read = async (page: string, query: Record<string, string>, matches: (event: ApiEvent) => boolean) => {
    counter.reset();
    const answer = await api.expect(200, user, 'GET', `/v1/events?${new URLSearchParams(query)}`);
    const counts = counter.counts();
    pages.push({
      page,
      limit: Number(query.limit),
      matching: feed.filter(matches).length,
      returned: answer.data.length,
      itemsRead: counts.QueryItemsRead ?? 0,
      queries: counts.Query ?? 0,
    });
    return answer.data as ApiEvent[];
  };
  const all = () => true;
  const first = await read('newest first, no filter', { limit: '10' }, all);
  await read('second page (starting_after)', { limit: '10', starting_after: first.at(-1)!.id }, all);
  await read('newest first, no filter', { limit: '100' }, all);
  await read(`sync: ending_before an id ${SYNC_BEHIND} behind the head`, { limit: '10', ending_before: feed[SYNC_BEHIND]!.id }, all);
  const updated = (event: ApiEvent) => event.type === 'conversation.updated';
  await read('type=conversation.updated (the majority)', { limit: '10', type: 'conversation.updated' }, updated);
  const attachment = (event: ApiEvent) => event.type.startsWith('attachment.');
  await read('type=attachment.* (a minority)', { limit: '10', type: 'attachment.*' }, attachment);
  await read('type=attachment.* (a minority)', { limit: '100', type: 'attachment.*' }, attachment);
  await read(
    'type=attachment.deleted (none in the feed)',
    { limit: '10', type: 'attachment.deleted' },
    (event) => event.type === 'attachment.deleted',
  );
  return { events: feed.length, types, seedSeconds, pages };
}

/** `writes` writes of the user's: a conversation, then mute toggles with an upload into it every UPLOAD_EVERY writes. */
async function seedFeed(composition: Composition, userId: string, writes: number): Promise<void> {
  const groups = new Set<string>();
  const { conversation } = await composition
    .use(conversations)
    .createConversation({ userId, groups, requestId: 'bench-seed' }, { kind: 'contact', id: `${userId}-contact` }, undefined);
  for (let index = 1; index < writes; index += 1) {
    // A request id per write, as the API gives each request: a transaction's idempotency token is made from it.
    const caller = { userId, groups, requestId: `bench-seed-${userId}-${index}` };
    if (index % UPLOAD_EVERY === 0) {
      const file = fileOf(1024);
      await composition
        .use(attachmentUploads)
        .upload(
          caller,
          { file: { filename: `feed-${index}.jpg`, fileType: file.type, bytes: file.bytes }, conversation_id: conversation.id },
          undefined,
        );
    } else {
      await composition.use(conversations).updateConversation(caller, conversation.id, { is_muted: index % 2 === 1 });
    }
  }
}

/** The user's whole feed, newest first, read by the bench's own Composition (not counted). */
async function wholeFeed(composition: Composition, userId: string): Promise<ApiEvent[]> {
  const feed: ApiEvent[] = [];
  for (;;) {
    const page = await composition.use(events).listEvents({ userId, groups: new Set(), requestId: 'bench-feed' }, undefined, {
      limit: 100,
      ...(feed.length > 0 ? { startingAfter: feed.at(-1)!.id } : {}),
    });
    feed.push(...page.data);
    if (!page.has_more) return feed;
  }
}
