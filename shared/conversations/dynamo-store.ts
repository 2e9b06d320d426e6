import {
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { newId } from '../ids.js';
import { logger } from '../observability.js';
import { systemClock, type Clock } from '../time.js';
import { isConditionFailed } from '../dynamo/errors.js';
import {
  CONVERSATION_SK_PREFIX,
  contactKey,
  conversationKey,
  counterpartKey,
  flagKey,
  groupKey,
  muteEndKey,
  muteEndSort,
  type Counterpart,
} from '../dynamo/keys.js';
import { queryPage } from '../dynamo/query-page.js';
import { conversationIndexes } from '../dynamo/tables.js';
import type { Page, PageRequest } from '../pagination.js';
import { listPlan, type Condition } from './list-plan.js';
import { shownMute } from './mute.js';
import { isUnread, readStateCases, readStateTime, type ReadStateCase, type ReadStateWrite, type ReadTimes } from './read-state.js';
import {
  newConversation,
  type Conversation,
  type ConversationChanges,
  type ConversationFilter,
  type ConversationStore,
  type ListCost,
  type Mute,
} from './model.js';

type Item = Record<string, unknown>;

/**
 * A uniqueness record younger than this may belong to a create that is still
 * writing its conversation; an older one that points at nothing is left over
 * from a failed create and gets repaired.
 */
const CREATE_LEASE_MS = 3_000;
const CREATE_DEADLINE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class DynamoConversationStore implements ConversationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * One conversation per (user, contact) and (user, group) without
   * transactions (dynalite has none): a conditional put of a uniqueness record
   * elects the single creator, which then writes the conversation. Losers read
   * the winner's conversation. A record left pointing at nothing by a failed
   * create is removed once its lease is over, so it never blocks the user.
   */
  async findOrCreate(userId: string, counterpart: Counterpart): Promise<{ conversation: Conversation; created: boolean }> {
    const lockKey = counterpartKey(userId, counterpart);
    const deadline = Date.now() + CREATE_DEADLINE_MS;
    while (Date.now() < deadline) {
      const { Item: lock } = await this.client.send(
        new GetCommand({ TableName: this.table, Key: lockKey, ConsistentRead: true }),
      );
      if (lock) {
        const conversationId = lock.conversation_id as string;
        const existing = await this.get(userId, conversationId);
        if (existing) return { conversation: existing, created: false };
        if (Date.now() - (lock.locked_at_ms as number) < CREATE_LEASE_MS) {
          await sleep(25);
        } else {
          await this.releaseLock(lockKey, conversationId);
        }
        continue;
      }
      const conversation = newConversation(newId('conv'), counterpart, this.clock());
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.table,
            Item: lockItem(userId, counterpart, conversation.id),
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
      } catch (error) {
        if (isConditionFailed(error)) continue;
        throw error;
      }
      await this.client.send(
        new PutCommand({
          TableName: this.table,
          Item: toItem(userId, conversation),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return { conversation, created: true };
    }
    throw new Error(`Conversation create for ${counterpart.kind} did not settle in ${CREATE_DEADLINE_MS} ms`);
  }

  async get(userId: string, id: string): Promise<Conversation | undefined> {
    const item = await this.getItem(userId, id);
    return item ? fromItem(item, this.clock()) : undefined;
  }

  async update(userId: string, id: string, changes: ConversationChanges): Promise<Conversation | undefined> {
    const { last_opened_at, ...fields } = changes;
    const readState: ReadStateWrite | undefined =
      last_opened_at === undefined ? undefined : last_opened_at === null ? { kind: 'clear' } : { kind: 'open', at: last_opened_at };
    const updated = await this.write(userId, id, fieldChanges(userId, fields), readState);
    return updated ? fromItem(updated, this.clock()) : undefined;
  }

  async markActive(userId: string, id: string, at: number): Promise<boolean> {
    return (await this.write(userId, id, new Changes(), { kind: 'activity', at })) !== undefined;
  }

  /**
   * One conditional UpdateItem of the given changes and, when the read state
   * moves, of the case of that move that holds for the stored times (see
   * ReadStateCase). A failed condition means the item is gone or its times
   * changed under us: read it, and try the case that now holds. Each retry
   * follows a concurrent write to the same conversation, so a few suffice.
   */
  private async write(userId: string, id: string, changes: Changes, readState: ReadStateWrite | undefined): Promise<Item | undefined> {
    const cases = readState ? readStateCases(readState) : [];
    let chosen: ReadStateCase | undefined = cases[0];
    for (let attempt = 0; attempt < READ_STATE_ATTEMPTS; attempt += 1) {
      const update = changes.with(userId, chosen, readState && readStateTime(readState));
      // Nothing to write (no fields, or only an open older than the stored one): the item as it is.
      if (!update) return this.getItem(userId, id);
      try {
        const { Attributes } = await this.client.send(
          new UpdateCommand({
            TableName: this.table,
            Key: conversationKey(userId, id),
            ...update,
            ConditionExpression: chosen ? `attribute_exists(pk) AND ${chosen.condition}` : 'attribute_exists(pk)',
            ReturnValues: 'ALL_NEW',
          }),
        );
        return Attributes;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
      }
      if (!chosen) return undefined;
      const item = await this.getItem(userId, id);
      if (!item) return undefined;
      const stored = readTimes(item);
      chosen = cases.find((candidate) => candidate.holds(stored));
      // The cases cover every state (unit-tested); without one the write would drop the read state.
      if (!chosen) throw new Error(`No read-state case holds for ${JSON.stringify(stored)}`);
    }
    throw new Error(`Read state of a conversation kept changing during ${READ_STATE_ATTEMPTS} conditional writes`);
  }

  private async getItem(userId: string, id: string): Promise<Item | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.table, Key: conversationKey(userId, id), ConsistentRead: true }));
    return Item;
  }

  /**
   * The conversation goes first, then its uniqueness record: a failure in
   * between leaves a record pointing at nothing, which the next create repairs,
   * never a conversation that a second create could duplicate.
   */
  async remove(userId: string, id: string): Promise<boolean> {
    let removed: Item | undefined;
    try {
      ({ Attributes: removed } = await this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: conversationKey(userId, id),
          ConditionExpression: 'attribute_exists(pk)',
          ReturnValues: 'ALL_OLD',
        }),
      ));
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
    if (removed) {
      await this.releaseLock(counterpartKey(userId, counterpartOf(fromItem(removed, this.clock()))), id);
    }
    return true;
  }

  async list(
    userId: string,
    filter: ConversationFilter,
    page: PageRequest,
  ): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    const now = this.clock();
    const plan = listPlan(userId, filter, now);
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    let keyCondition: string;
    if (plan.index) {
      names['#key'] = plan.index.partitionKey;
      values[':key'] = plan.index.value;
      keyCondition = '#key = :key';
    } else {
      values[':user'] = userId;
      values[':prefix'] = CONVERSATION_SK_PREFIX;
      keyCondition = 'pk = :user AND begins_with(sk, :prefix)';
    }
    const conditions = [...(plan.own ? [plan.own] : []), ...plan.residual];
    for (const condition of conditions) Object.assign(values, condition.values);
    const filterExpression = conditions.map((condition) => condition.expression).join(' AND ');
    // Mutes over by now still sit under `true` in by_muted until written back: muted=false
    // merges them in, and both muted lists write them back after reading, so that they are
    // read only until then. The answer never depends on the write-back having happened.
    const expired =
      plan.index?.name === conversationIndexes.muted.name
        ? await this.expiredMutes(userId, now, plan.residual)
        : { items: [], itemsRead: 0, queries: 0 };
    const { page: items, cost } = await queryPage(
      this.client,
      {
        TableName: this.table,
        ...(plan.index ? { IndexName: plan.index.name } : { ConsistentRead: true }),
        KeyConditionExpression: keyCondition,
        ...(filterExpression ? { FilterExpression: filterExpression } : {}),
        ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
      },
      page,
      (cursor) => ({ ...conversationKey(userId, cursor), ...(plan.index ? { [plan.index.partitionKey]: plan.index.value } : {}) }),
    );
    const merged = plan.expiredMutes ? mergePage(items, expired.items, page) : items;
    if (expired.items.length > 0) await this.endMutes(userId, expired.items);
    return {
      page: { has_more: merged.has_more, data: merged.data.map((item) => fromItem(item, now)) },
      cost: {
        index: plan.index?.name ?? 'table',
        queries: cost.queries + expired.queries,
        itemsRead: cost.itemsRead + expired.itemsRead,
      },
    };
  }

  /**
   * The user's mutes whose end is at or before `now` that still carry
   * `muted=true` in by_muted: one key condition on by_mute_end. Read whole
   * (a muted=false page must merge all of them to be exact); there are only
   * those that ended since the last muted list wrote them back. The other
   * filters of the list apply to them as well.
   */
  private async expiredMutes(userId: string, now: number, others: Condition[]) {
    const items: Item[] = [];
    let itemsRead = 0;
    let queries = 0;
    let startKey: Item | undefined;
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: conversationIndexes.muteEnd.name,
          KeyConditionExpression: 'mute_end_key = :muteKey AND mute_end_at <= :muteEnd',
          ...(others.length > 0 ? { FilterExpression: others.map((condition) => condition.expression).join(' AND ') } : {}),
          ExpressionAttributeValues: {
            ':muteKey': muteEndKey(userId),
            ':muteEnd': muteEndSort(now),
            ...Object.assign({}, ...others.map((condition) => condition.values)),
          },
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      queries += 1;
      itemsRead += result.ScannedCount ?? 0;
      items.push(...(result.Items ?? []));
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return { items, itemsRead, queries };
  }

  /**
   * Writes mutes that are over back as no mute, each only if it is still the
   * same timed mute (a user who muted again meanwhile keeps the new mute).
   * Nothing a response shows depends on it; it only keeps by_muted's `true`
   * partition to live mutes, so the lists' cost stays bounded. A failure is
   * logged and left for the next list.
   */
  private async endMutes(userId: string, items: Item[]): Promise<void> {
    const endOne = async (item: Item) => {
      const update = fieldChanges(userId, { mute: { kind: 'off' } }).with(userId, undefined, undefined)!;
      try {
        await this.client.send(
          new UpdateCommand({
            TableName: this.table,
            Key: conversationKey(userId, item.sk as string),
            UpdateExpression: update.UpdateExpression,
            ConditionExpression: 'muted_until = :seen',
            ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':seen': item.muted_until },
          }),
        );
      } catch (error) {
        if (!isConditionFailed(error)) logger.warn('Could not write back an expired mute', { error: String(error) });
      }
    };
    for (let start = 0; start < items.length; start += END_MUTES_IN_PARALLEL) {
      await Promise.all(items.slice(start, start + END_MUTES_IN_PARALLEL).map(endOne));
    }
  }

  private async releaseLock(lockKey: { pk: string; sk: string }, conversationId: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: lockKey,
          ConditionExpression: 'conversation_id = :id',
          ExpressionAttributeValues: { ':id': conversationId },
        }),
      );
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }
}

const BATCH_WRITE_MAX = 25;

/**
 * Writes many conversations of one user at once, each with its uniqueness
 * record, exactly as `findOrCreate` stores them: the seeding path of the
 * benchmark and of tests that need thousands of conversations. Not for the
 * API (it does not check for existing ones).
 */
export async function putConversations(
  client: DynamoDBDocumentClient,
  table: string,
  userId: string,
  conversations: readonly Conversation[],
  parallelBatches = 8,
): Promise<void> {
  const items = conversations.flatMap((conversation) => [
    toItem(userId, conversation),
    lockItem(userId, counterpartOf(conversation), conversation.id),
  ]);
  const batches: Item[][] = [];
  for (let start = 0; start < items.length; start += BATCH_WRITE_MAX) batches.push(items.slice(start, start + BATCH_WRITE_MAX));
  const writeBatch = async (batch: Item[]) => {
    let requests = batch.map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; requests.length > 0; attempt += 1) {
      if (attempt > 0) await sleep(Math.min(1_000, 2 ** attempt * 25));
      const { UnprocessedItems } = await client.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = (UnprocessedItems?.[table] ?? []) as typeof requests;
    }
  };
  let next = 0;
  const worker = async () => {
    while (next < batches.length) await writeBatch(batches[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(parallelBatches, batches.length) }, worker));
}

function lockItem(userId: string, counterpart: Counterpart, conversationId: string): Item {
  return { ...counterpartKey(userId, counterpart), conversation_id: conversationId, locked_at_ms: Date.now() };
}

function counterpartOf(conversation: Conversation): Counterpart {
  return conversation.group_id ? { kind: 'group', id: conversation.group_id } : { kind: 'contact', id: conversation.contact_id ?? '' };
}

const READ_STATE_ATTEMPTS = 8;
const END_MUTES_IN_PARALLEL = 10;

/** The stored mute of an API-shaped conversation (seeding writes those). */
function muteOf(conversation: Conversation): Mute {
  if (!conversation.is_muted) return { kind: 'off' };
  return conversation.muted_until === null ? { kind: 'forever' } : { kind: 'until', until: conversation.muted_until };
}

/** The attributes a mute is stored as: the flag, its by_muted key, and for a timed mute its end, also keyed in by_mute_end. */
function muteAttributes(userId: string, mute: Mute): Item {
  return {
    is_muted: mute.kind !== 'off',
    [conversationIndexes.muted.partitionKey]: flagKey(userId, mute.kind !== 'off'),
    ...(mute.kind === 'until'
      ? { muted_until: mute.until, [conversationIndexes.muteEnd.partitionKey]: muteEndKey(userId), [conversationIndexes.muteEnd.sortKey]: muteEndSort(mute.until) }
      : {}),
  };
}
const TIMED_MUTE_ATTRIBUTES = ['muted_until', conversationIndexes.muteEnd.partitionKey, conversationIndexes.muteEnd.sortKey];

function toItem(userId: string, conversation: Conversation): Item {
  const { is_muted: _muted, muted_until: _until, ...plain } = conversation;
  return {
    ...conversationKey(userId, conversation.id),
    ...withoutNulls(plain),
    ...muteAttributes(userId, muteOf(conversation)),
    [conversationIndexes.pinned.partitionKey]: flagKey(userId, conversation.is_pinned),
    [conversationIndexes.archived.partitionKey]: flagKey(userId, conversation.archived_at !== null),
    [conversationIndexes.unread.partitionKey]: flagKey(userId, isUnread(conversation)),
    ...(conversation.group_id ? { [conversationIndexes.group.partitionKey]: groupKey(userId, conversation.group_id) } : {}),
    ...(conversation.contact_id ? { [conversationIndexes.contact.partitionKey]: contactKey(userId, conversation.contact_id) } : {}),
  };
}

/** Absent, not null: conditions test `attribute_not_exists`, and null is not absent. */
function withoutNulls(record: Record<string, unknown>): Item {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null));
}

const orNull = <T>(value: unknown) => (value === undefined || value === null ? null : (value as T));

function readTimes(item: Item): ReadTimes {
  return { last_active_at: orNull(item.last_active_at), last_opened_at: orNull(item.last_opened_at) };
}

function storedMute(item: Item): Mute {
  if (item.is_muted !== true) return { kind: 'off' };
  return typeof item.muted_until === 'number' ? { kind: 'until', until: item.muted_until } : { kind: 'forever' };
}

/** The conversation as a response shows it at `now`. */
function fromItem(item: Item, now: number): Conversation {
  return {
    id: item.id as string,
    contact_id: orNull(item.contact_id),
    group_id: orNull(item.group_id),
    pinned_message_id: orNull(item.pinned_message_id),
    is_pinned: item.is_pinned === true,
    ...shownMute(storedMute(item), now),
    ...readTimes(item),
    created_at: item.created_at as number,
    archived_at: orNull(item.archived_at),
  };
}

/** SET and REMOVE clauses, each field keeping its index keys in step. */
class Changes {
  private readonly set = new Map<string, unknown>();
  private readonly remove = new Set<string>();

  assign(attribute: string, value: unknown): this {
    this.set.set(attribute, value);
    this.remove.delete(attribute);
    return this;
  }

  drop(attribute: string): this {
    this.remove.add(attribute);
    this.set.delete(attribute);
    return this;
  }

  isEmpty(): boolean {
    return this.set.size === 0 && this.remove.size === 0;
  }

  /**
   * The update expression of these changes plus a read-state case (whose
   * condition refers to `:rs_at` and `:rs_null`); undefined when nothing is written.
   */
  with(userId: string, readState: ReadStateCase | undefined, at: number | undefined) {
    const set = new Map(this.set);
    const remove = new Set(this.remove);
    if (readState) {
      for (const [attribute, value] of Object.entries(readState.set)) set.set(attribute, value);
      for (const attribute of readState.remove) remove.add(attribute);
      if (readState.unread !== undefined) set.set(conversationIndexes.unread.partitionKey, flagKey(userId, readState.unread));
    }
    const values: Record<string, unknown> = {};
    const assignments = [...set].map(([attribute, value], index) => {
      values[`:v${index}`] = value;
      return `${attribute} = :v${index}`;
    });
    if (assignments.length === 0 && remove.size === 0) return undefined;
    // Only the placeholders the case's condition uses: DynamoDB refuses unused ones.
    if (readState?.condition.includes(':rs_at')) values[':rs_at'] = at;
    if (readState?.condition.includes(':rs_null')) values[':rs_null'] = 'NULL';
    const clauses = [assignments.length ? `SET ${assignments.join(', ')}` : '', remove.size ? `REMOVE ${[...remove].join(', ')}` : ''];
    return {
      UpdateExpression: clauses.filter(Boolean).join(' '),
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    };
  }
}

/** The changes of the plain fields and the mute. */
function fieldChanges(userId: string, changes: Omit<ConversationChanges, 'last_opened_at'>): Changes {
  const update = new Changes();
  if (changes.is_pinned !== undefined) {
    update.assign('is_pinned', changes.is_pinned).assign(conversationIndexes.pinned.partitionKey, flagKey(userId, changes.is_pinned));
  }
  if (changes.mute !== undefined) {
    for (const [attribute, value] of Object.entries(muteAttributes(userId, changes.mute))) update.assign(attribute, value);
    if (changes.mute.kind !== 'until') for (const attribute of TIMED_MUTE_ATTRIBUTES) update.drop(attribute);
  }
  if (changes.pinned_message_id !== undefined) {
    if (changes.pinned_message_id === null) update.drop('pinned_message_id');
    else update.assign('pinned_message_id', changes.pinned_message_id);
  }
  if (changes.archived_at !== undefined) {
    if (changes.archived_at === null) update.drop('archived_at');
    else update.assign('archived_at', changes.archived_at);
    update.assign(conversationIndexes.archived.partitionKey, flagKey(userId, changes.archived_at !== null));
  }
  return update;
}

/**
 * A `muted=false` page read from by_muted's `false` partition, merged with
 * the mutes that are over by now (all of them, so the merge is exact): the
 * first `limit` of the union in list order; `has_more` when either side has
 * more. Duplicates (an item written back between the two reads) count once.
 */
function mergePage(main: Page<Item>, expired: Item[], page: PageRequest): Page<Item> {
  const backwards = page.endingBefore !== undefined;
  const cursor = page.startingAfter ?? page.endingBefore;
  const beyondCursor = (id: string) => cursor === undefined || (backwards ? id > cursor : id < cursor);
  const byId = new Map<string, Item>();
  for (const item of [...main.data, ...expired.filter((item) => beyondCursor(item.sk as string))]) byId.set(item.sk as string, item);
  // Nearest the cursor first: newest first forwards, oldest first backwards.
  const ordered = [...byId.values()].sort((a, b) => ((a.sk as string) < (b.sk as string) ? 1 : -1) * (backwards ? -1 : 1));
  const data = ordered.slice(0, page.limit);
  if (backwards) data.reverse();
  return { has_more: main.has_more || ordered.length > page.limit, data };
}
