import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Groups } from '../auth/groups.js';
import { CONTENDED, retryWhileBusy } from '../dynamo/busy-retry.js';
import { unlessConditionFails } from '../dynamo/errors.js';
import { and, type Condition, equals, expressions, itemAbsent, itemExists, notExists } from '../dynamo/expressions.js';
import { conversationKey, largeSideKey } from '../dynamo/keys.js';
import { keysUnder, type QueryCost, queryPage } from '../dynamo/query-page.js';
import { conversationIndexes } from '../dynamo/tables.js';
import { type TransactItem, transactWrite } from '../dynamo/transactions.js';
import { createdEvent, deletedEvent, updatedEvents } from '../events/model.js';
import { headTaken, type Outbox, withFeed } from '../events/outbox.js';
import { seededId } from '../ids.js';
import type { Page, PageRequest } from '../pagination.js';
import { type Clock, systemClock } from '../time.js';
import { activityPage, wholeSet } from './activity-list.js';
import { endedMutes, mergeIntoPage, writeBackEndedMutes } from './ended-mutes.js';
import { applied, Changes, counterpartOf, fromItem, type Item, readTimes, shownAsRead, toItem } from './item-codec.js';
import { leftOut, matchesFilter, showsThread, withThreadActivity } from './large-sides.js';
import { LARGE_SIDE_KEY, LargeThreads } from './large-threads.js';
import { conjunction, listPlan, listQuery } from './list-plan.js';
import {
  type Conversation,
  type ConversationChanges,
  type ConversationFilter,
  type ConversationStore,
  type Counterpart,
  type ListCost,
  type ListOrder,
  newConversation,
} from './model.js';
import { caseCondition, caseHolding, type ReadStateCase, type ReadStateWrite, readStateCases } from './read-state.js';
import { ConversationReads } from './reads.js';
import { HOLDER, uniquenessItem, uniquenessKey } from './uniqueness.js';

/** Conversations under the user's partition, sort key = conversation id (a ULID: creation order). */
export class DynamoConversationStore implements ConversationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    /** The user's feed: creates, visible updates and removals write their event in their own transaction. */
    private readonly outbox: Outbox,
    private readonly clock: Clock = systemClock,
  ) {
    this.threads = new LargeThreads(client, table);
    this.reads = new ConversationReads(client, table, clock);
  }

  /** The consistent reads of one conversation and of a side (shared/conversations/reads.ts). */
  private readonly reads: ConversationReads;

  /** Group threads' records (the same table): whether a group's thread is large. */
  private readonly threads: LargeThreads;

  /**
   * One conversation per (user, contact) and (user, group): the uniqueness record and the conversation
   * in one transaction, each on not existing yet (docs/consistency.md, "Per operation"). A seeded
   * create (Idempotency-Key) mints the same id on every run, and so knows what it finds as its own: 201.
   */
  async findOrCreate(
    userId: string,
    counterpart: Counterpart,
    seed: string | undefined,
    requestId: string,
  ): Promise<{ conversation: Conversation; created: boolean }> {
    return retryWhileBusy(async () => {
      const conversation = newConversation(seededId('conv', seed), counterpart, this.clock());
      // A group's side is made marked when its thread is large, else on the condition that it is still small.
      const thread = counterpart.kind === 'group' ? await this.threads.thread(counterpart.id) : undefined;
      const items = creationItems(this.table, userId, conversation, thread?.large === true);
      if (thread && !thread.large) items.push(this.threads.stillSmall(counterpart.id));
      const feed = await this.outbox.append(userId, [createdEvent('conversation', conversation, requestId)]);
      const outcome = await transactWrite(this.client, [...items, ...feed.items]);
      if (outcome.committed) return { conversation, created: true };
      // Another writer of the user's feed took the sequence and nothing was written: the place is as it was.
      if (!headTaken(outcome, items.length)) {
        const existing = await this.holderOf(userId, counterpart);
        if (existing) return { conversation: existing, created: existing.id === conversation.id };
      }
      // Nothing holds the place: the other create failed, or its conversation was deleted since. Try again.
      return CONTENDED;
    });
  }

  /** The conversation that holds the (user, counterpart) place, read consistently. */
  private async holderOf(userId: string, counterpart: Counterpart): Promise<Conversation | undefined> {
    const id = await this.sideOf(userId, counterpart);
    // A group's side is asked for with the group in the token (ConversationService.createConversation).
    return id ? this.shown(userId, id, new Set(counterpart.kind === 'group' ? [counterpart.id] : [])) : undefined;
  }

  /** The id of the user's conversation with this contact or group (their side of its thread): one consistent read. */
  sideOf(userId: string, counterpart: Counterpart): Promise<string | undefined> {
    return this.reads.sideOf(userId, counterpart);
  }

  async isLargeThread(groupId: string): Promise<boolean> {
    return (await this.threads.thread(groupId)).large;
  }

  /**
   * Every side of a thread, as (user, conversation) pairs, a page of the
   * by_thread index at a time. The index is eventually consistent: a side
   * created in the last moment may be missed, and starts without this
   * activity as every new side does.
   */
  async *sidesOf(key: string, unmarkedOnly = false): AsyncGenerator<{ userId: string; conversationId: string }[]> {
    // The index projects every attribute, so it can leave out the sides marked large already.
    const filter = unmarkedOnly ? notExists(LARGE_SIDE_KEY) : undefined;
    for await (const keys of keysUnder(this.client, this.table, conversationIndexes.thread, key, filter)) {
      yield keys.map(({ pk, sk }) => ({ userId: pk, conversationId: sk }));
    }
  }

  get(userId: string, id: string): Promise<Conversation | undefined> {
    return this.reads.get(userId, id);
  }

  /**
   * A PUT. What it changes is decided before it writes: the stored
   * conversation is read, the read-state case that holds chosen, and the
   * conversation as it would be after computed. A change the user can see is
   * one transaction of the conditional update, on the condition that every
   * shown field still holds the value read (so the event's
   * previous_attributes are the true old values), and its
   * conversation.updated event; a condition that fails means another write
   * came between: read again. A change nobody can see (nothing, or a stored
   * mute that has already ended) is written as before, without an event.
   */
  async update(
    userId: string,
    id: string,
    changes: ConversationChanges,
    requestId: string,
    groups: Groups,
  ): Promise<Conversation | undefined> {
    const { last_opened_at, ...fields } = changes;
    const readState: ReadStateWrite | undefined =
      last_opened_at === undefined ? undefined : last_opened_at === null ? { kind: 'clear' } : { kind: 'open', at: last_opened_at };
    const planned = Changes.of(userId, fields);
    const cases = readState ? readStateCases(readState) : [];
    return withFeed(async (retry) => {
      const item = await this.getItem(userId, id);
      if (!item) return undefined;
      const now = this.clock();
      const chosen = readState ? caseHolding(cases, readTimes(item)) : undefined;
      const update = planned.with(userId, id, chosen);
      // The answer and the event show the side as GET does; the conditions hold the stored item.
      const shown = await this.showing(item, groups);
      const before = fromItem(shown, now);
      const after = update ? fromItem(applied(shown, update), now) : before;
      const events = updatedEvents('conversation', before, after, requestId);
      if (!update || events.length === 0) {
        const written = await this.write(userId, id, planned, readState);
        return written ? fromItem(await this.showing(written, groups), now) : undefined;
      }
      const change = {
        Update: {
          TableName: this.table,
          Key: conversationKey(userId, id),
          ...expressions({ update, condition: and(stillThere(chosen), shownAsRead(item)) }),
        },
      };
      const feed = await this.outbox.append(userId, events);
      const outcome = await transactWrite(this.client, [change, ...feed.items]);
      if (outcome.committed) return after;
      // The head taken by another writer, or the conversation changed or went since it was read: read again.
      return retry;
    });
  }

  /**
   * One conditional UpdateItem of the given changes and, when the read state
   * moves, of the case of that move that holds for the stored times (see
   * ReadStateCase): the unread index key it writes is always the one the two
   * stored times give. A failed condition means the item is gone or its times
   * changed under us: read it, and try the case that now holds. The read only
   * chooses which conditional write to try; it is never written back as such.
   */
  private async write(userId: string, id: string, changes: Changes, readState: ReadStateWrite | undefined): Promise<Item | undefined> {
    const cases = readState ? readStateCases(readState) : [];
    let chosen: ReadStateCase | undefined = cases[0];
    return retryWhileBusy(async () => {
      const update = conversationUpdate(this.table, userId, id, changes, chosen);
      // Nothing to write (no fields, or only an open older than the stored one): the item as it is.
      if (!update) return this.getItem(userId, id);
      const written = await unlessConditionFails(this.client.send(new UpdateCommand({ ...update, ReturnValues: 'ALL_NEW' })));
      if (written) return written.Attributes;
      if (!chosen) return undefined;
      const item = await this.getItem(userId, id);
      if (!item) return undefined;
      chosen = caseHolding(cases, readTimes(item));
      return CONTENDED;
    });
  }

  private getItem(userId: string, id: string): Promise<Item | undefined> {
    return this.reads.item(userId, id);
  }

  /**
   * The conversation and its uniqueness record go in one transaction, so a
   * later create for that contact or group makes a new conversation and
   * never meets a record of a conversation that is gone. What hangs off the
   * conversation (its attachments) is removed from the table's stream
   * (functions/cleanup.ts). The token is made from the items (contentToken):
   * the SDK's retry after a lost answer is a no-op that answers success, not
   * a 404 for the request that deleted; another DELETE request is a request
   * of its own and finds nothing (404).
   */
  async remove(userId: string, id: string, requestId: string): Promise<boolean> {
    return withFeed(async (retry) => {
      const conversation = await this.get(userId, id);
      if (!conversation) return false;
      const items = removalItems(this.table, userId, conversation);
      const feed = await this.outbox.append(userId, [deletedEvent('conversation', id, requestId)]);
      const outcome = await transactWrite(this.client, [...items, ...feed.items]);
      if (outcome.committed) return true;
      if (headTaken(outcome, items.length)) return retry;
      // Another request deleted it first (or is deleting it now): this one deleted nothing.
      return false;
    });
  }

  /**
   * A page of the plan's query. When it reads by_muted, the mutes that ended
   * by now but are still stored as mutes are read too (by_mute_end): merged
   * into `muted=false`, and written back as no mute after the page is read,
   * so they cost extra reads only until then. The answer never depends on the
   * write-back having happened. The user's large sides among `groups` are
   * read apart with their threads' activity, left out of the Query and
   * merged in where they match (docs/api.md gives the bound).
   */
  async list(
    userId: string,
    filter: ConversationFilter,
    page: PageRequest,
    order: ListOrder = { by: 'created' },
    groups: Groups = new Set(),
  ): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    const now = this.clock();
    const large = await this.largeSides(userId, groups);
    const apart = new Set(large.items.map((item) => item.id as string));
    const matching = large.items.filter((item) => matchesFilter(item, filter, now));
    const plus = (cost: ListCost): ListCost => ({
      ...cost,
      queries: cost.queries + large.cost.queries,
      itemsRead: cost.itemsRead + large.cost.itemsRead,
    });
    if (order.by === 'activity') {
      const byId = new Map(large.items.map((item) => [item.id as string, item]));
      const { page: items, cost } = await activityPage(this.client, this.table, userId, filter, page, order, now, {
        items: matching,
        byId,
      });
      return { page: { has_more: items.has_more, data: items.data.map((item) => fromItem(item, now)) }, cost: plus(cost) };
    }
    const plan = listPlan(userId, filter, now);
    const { query, startKeyOf } = listQuery(this.table, userId, plan);
    const ended =
      plan.index?.name === conversationIndexes.muted.name
        ? await endedMutes(this.client, this.table, userId, now, conjunction(plan.residual))
        : { items: [], cost: { queries: 0, itemsRead: 0 } };
    // As many more as are read apart, then those left out: the page is full, and has_more exact, without them.
    const { page: read, cost } = await queryPage(this.client, query, { ...page, limit: page.limit + apart.size }, startKeyOf);
    const items = leftOut(read, apart, page);
    const endedHere = ended.items.filter((item) => !apart.has(item.id as string));
    const merged = mergeIntoPage(plan.expiredMutes ? mergeIntoPage(items, endedHere, page) : items, matching, page);
    if (ended.items.length > 0) await writeBackEndedMutes(this.client, this.table, userId, ended.items);
    return {
      page: { has_more: merged.has_more, data: merged.data.map((item) => fromItem(item, now)) },
      cost: plus({
        index: plan.index?.name ?? 'table',
        queries: cost.queries + ended.cost.queries,
        itemsRead: cost.itemsRead + ended.cost.itemsRead,
      }),
    };
  }

  /**
   * The conversation as the user's token shows it: a large group's side
   * with its thread's activity (one more read) when the token lists the group.
   */
  async shown(userId: string, id: string, groups: Groups): Promise<Conversation | undefined> {
    const item = await this.getItem(userId, id);
    return item ? fromItem(await this.showing(item, groups), this.clock()) : undefined;
  }

  /** The stored side as a token with these groups sees it: a large group's with its thread's activity (one more read). */
  private async showing(item: Item, groups: Groups): Promise<Item> {
    if (!showsThread(item, LARGE_SIDE_KEY, groups)) return item;
    const thread = await this.threads.thread(item.group_id as string);
    return withThreadActivity(item, thread.lastActiveAt);
  }

  /**
   * The user's sides of the large groups `groups` lists, each with its
   * thread's activity: one Query of by_large_side (its sides of large
   * groups) and one BatchGetItem of their threads. None without groups.
   */
  private async largeSides(userId: string, groups: Groups): Promise<{ items: Item[]; cost: QueryCost }> {
    const cost: QueryCost = { queries: 0, itemsRead: 0 };
    if (groups.size === 0) return { items: [], cost };
    const index = conversationIndexes.large;
    const marked = await wholeSet(
      this.client,
      { TableName: this.table, IndexName: index.name, ...expressions({ keyCondition: equals(index.partitionKey, largeSideKey(userId)) }) },
      cost,
    );
    const shown = marked.filter((item) => showsThread(item, LARGE_SIDE_KEY, groups));
    if (shown.length === 0) return { items: [], cost };
    const activity = await this.threads.activityOf(shown.map((item) => item.group_id as string));
    cost.queries += 1;
    cost.itemsRead += activity.size;
    return { items: shown.map((item) => withThreadActivity(item, activity.get(item.group_id as string))), cost };
  }
}

/**
 * The conditional update of a conversation that exists: the changes, and the
 * read-state case's times, unread key and condition. For UpdateItem and for
 * a TransactWriteItems `Update` alike (a writer of `last_active_at` in a
 * transaction uses readStateCases({ kind: 'activity', at }) through this, and
 * on the conversation's ConditionalCheckFailed reads it and retries with the
 * case that holds, as `write` does). Undefined when nothing would be written.
 */
function conversationUpdate(table: string, userId: string, id: string, changes: Changes, readState?: ReadStateCase) {
  const update = changes.with(userId, id, readState);
  if (!update) return undefined;
  return { TableName: table, Key: conversationKey(userId, id), ...expressions({ update, condition: stillThere(readState) }) };
}

/**
 * A conversation's creation: its uniqueness record and it, each on the
 * condition that it does not exist yet, so that of two creations for one
 * (user, counterpart) one commits. A create request's and the fan-out's (a
 * contact's new side) alike.
 */
export function creationItems(table: string, userId: string, conversation: Conversation, largeSide = false): TransactItem[] {
  const item = toItem(userId, conversation);
  return [
    {
      Put: {
        TableName: table,
        Item: uniquenessItem(userId, counterpartOf(conversation), conversation.id),
        ...expressions({ condition: itemAbsent() }),
      },
    },
    {
      Put: {
        TableName: table,
        Item: largeSide ? { ...item, [LARGE_SIDE_KEY]: largeSideKey(userId) } : item,
        ...expressions({ condition: itemAbsent() }),
      },
    },
  ];
}

/** A conversation's removal: it and its uniqueness record, each as long as it is there. */
export function removalItems(table: string, userId: string, conversation: Conversation): TransactItem[] {
  return [
    { Delete: { TableName: table, Key: conversationKey(userId, conversation.id), ...expressions({ condition: itemExists() }) } },
    {
      Delete: {
        TableName: table,
        Key: uniquenessKey(userId, counterpartOf(conversation)),
        ...expressions({ condition: holdsPlaceFor(conversation.id) }),
      },
    },
  ];
}

/** The condition of every write to a conversation: it exists and, when the read state moves, the case's condition holds. */
export const stillThere = (readState?: ReadStateCase): Condition =>
  readState ? and(itemExists(), caseCondition(readState)) : itemExists();

/** A uniqueness record still names this conversation. */
const holdsPlaceFor = (conversationId: string): Condition => equals(HOLDER, conversationId);
