import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { newId } from '../ids.js';
import { systemClock, type Clock } from '../time.js';
import { unlessConditionFails } from '../dynamo/errors.js';
import { conversationKey, type ItemKey } from '../dynamo/keys.js';
import { queryPage } from '../dynamo/query-page.js';
import type { Page, PageRequest } from '../pagination.js';
import { endedMutes, mergeEndedMutes, writeBackEndedMutes } from './ended-mutes.js';
import { Changes, counterpartOf, fromItem, readTimes, toItem, type Item } from './item-codec.js';
import { conjunction, listPlan, listQuery } from './list-plan.js';
import { readStateCases, type ReadStateCase, type ReadStateWrite } from './read-state.js';
import {
  newConversation,
  type Conversation,
  type ConversationChanges,
  type ConversationFilter,
  type ConversationStore,
  type Counterpart,
  type ListCost,
} from './model.js';
import { holderOf, uniquenessItem, uniquenessKey } from './uniqueness.js';
import { conversationIndexes } from '../dynamo/tables.js';

/**
 * A uniqueness record younger than this may belong to a create that is still
 * writing its conversation; an older one that points at nothing is left over
 * from a failed create and gets repaired.
 */
const CREATE_LEASE_MS = 3_000;
const CREATE_DEADLINE_MS = 10_000;

/** Each retry of a read-state write follows a concurrent write to the same conversation. */
const READ_STATE_ATTEMPTS = 8;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A conversation exists (its key is there): the condition of every write to one. */
const EXISTS = { ConditionExpression: 'attribute_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };
const ABSENT = { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };

/** Conversations under the user's partition, sort key = conversation id (a ULID: creation order). */
export class DynamoConversationStore implements ConversationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * One conversation per (user, contact) and (user, group) without
   * transactions: a conditional put of a uniqueness record elects the single
   * creator, which then writes the conversation. Losers read the winner's
   * conversation. A record left pointing at nothing by a failed create is
   * removed once its lease is over, so it never blocks the user.
   */
  async findOrCreate(userId: string, counterpart: Counterpart): Promise<{ conversation: Conversation; created: boolean }> {
    const lockKey = uniquenessKey(userId, counterpart);
    const deadline = Date.now() + CREATE_DEADLINE_MS;
    while (Date.now() < deadline) {
      const { Item: lock } = await this.client.send(new GetCommand({ TableName: this.table, Key: lockKey, ConsistentRead: true }));
      if (lock) {
        const conversationId = holderOf(lock);
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
      const elected = await unlessConditionFails(
        this.client.send(new PutCommand({ TableName: this.table, Item: uniquenessItem(userId, counterpart, conversation.id), ...ABSENT })),
      );
      if (!elected) continue;
      await this.client.send(new PutCommand({ TableName: this.table, Item: toItem(userId, conversation), ...ABSENT }));
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
    const updated = await this.write(userId, id, Changes.of(userId, fields), readState);
    return updated ? fromItem(updated, this.clock()) : undefined;
  }

  async markActive(userId: string, id: string, at: number): Promise<boolean> {
    return (await this.write(userId, id, new Changes(), { kind: 'activity', at })) !== undefined;
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
    for (let attempt = 0; attempt < READ_STATE_ATTEMPTS; attempt += 1) {
      const update = conversationUpdate(this.table, userId, id, changes, chosen);
      // Nothing to write (no fields, or only an open older than the stored one): the item as it is.
      if (!update) return this.getItem(userId, id);
      const written = await unlessConditionFails(this.client.send(new UpdateCommand({ ...update, ReturnValues: 'ALL_NEW' })));
      if (written) return written.Attributes;
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
    const removed = await unlessConditionFails(
      this.client.send(new DeleteCommand({ TableName: this.table, Key: conversationKey(userId, id), ...EXISTS, ReturnValues: 'ALL_OLD' })),
    );
    if (!removed) return false;
    if (removed.Attributes) await this.releaseLock(uniquenessKey(userId, counterpartOf(removed.Attributes)), id);
    return true;
  }

  /**
   * A page of the plan's query. When it reads by_muted, the mutes that ended
   * by now but are still stored as mutes are read too (by_mute_end): merged
   * into `muted=false`, and written back as no mute after the page is read,
   * so they cost extra reads only until then. The answer never depends on the
   * write-back having happened.
   */
  async list(userId: string, filter: ConversationFilter, page: PageRequest): Promise<{ page: Page<Conversation>; cost: ListCost }> {
    const now = this.clock();
    const plan = listPlan(userId, filter, now);
    const { query, startKeyOf } = listQuery(this.table, userId, plan);
    const ended = plan.index?.name === conversationIndexes.muted.name
      ? await endedMutes(this.client, this.table, userId, now, conjunction(plan.residual))
      : { items: [], cost: { queries: 0, itemsRead: 0 } };
    const { page: items, cost } = await queryPage(this.client, query, page, startKeyOf);
    const merged = plan.expiredMutes ? mergeEndedMutes(items, ended.items, page) : items;
    if (ended.items.length > 0) await writeBackEndedMutes(this.client, this.table, userId, ended.items);
    return {
      page: { has_more: merged.has_more, data: merged.data.map((item) => fromItem(item, now)) },
      cost: { index: plan.index?.name ?? 'table', queries: cost.queries + ended.cost.queries, itemsRead: cost.itemsRead + ended.cost.itemsRead },
    };
  }

  private async releaseLock(lockKey: ItemKey, conversationId: string): Promise<void> {
    await unlessConditionFails(
      this.client.send(
        new DeleteCommand({
          TableName: this.table,
          Key: lockKey,
          ConditionExpression: '#holder = :id',
          ExpressionAttributeNames: { '#holder': 'conversation_id' },
          ExpressionAttributeValues: { ':id': conversationId },
        }),
      ),
    );
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
export function conversationUpdate(table: string, userId: string, id: string, changes: Changes, readState?: ReadStateCase) {
  const update = changes.with(userId, readState);
  if (!update) return undefined;
  return {
    TableName: table,
    Key: conversationKey(userId, id),
    ...update,
    ConditionExpression: readState ? `${EXISTS.ConditionExpression} AND ${readState.condition}` : EXISTS.ConditionExpression,
    ExpressionAttributeNames: { ...update.ExpressionAttributeNames, ...EXISTS.ExpressionAttributeNames },
  };
}
