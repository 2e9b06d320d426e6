import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { expressions, itemAbsent } from '../dynamo/expressions.js';
import { type Counterpart, deliveredChangeKey, PARTITION_KEY, SORT_KEY } from '../dynamo/keys.js';
import { type TransactItem, transactWrite } from '../dynamo/transactions.js';
import { EXPIRES_AT } from '../events/item.js';
import { createdEvent, EVENT_RETENTION_SECONDS, type EventDraft } from '../events/model.js';
import { type Outbox, withFeed } from '../events/outbox.js';
import { idWithUlidOf } from '../ids.js';
import type { ScanSettings } from '../scanning/model.js';
import type { Clock } from '../time.js';
import { ConversationActivity } from './activity.js';
import { creationItems } from './dynamo-store.js';
import { latestUpload, type MemberDelivery, memberEvents, showsAnything, type ThreadChange } from './fan-out.js';
import type { ThreadSides } from './membership.js';
import { type Conversation, newConversation } from './model.js';

/**
 * Changes written to one member in one transaction at most: each is two
 * items (its event and the record that it was delivered), under DynamoDB's
 * 100 items per transaction with room for the side, its event and the head.
 */
const CHANGES_PER_WRITE = 40;
/** DynamoDB's most keys in one BatchGetItem. */
const BATCH_GET_MAX = 100;

/**
 * Writes what other members' changes bring one member: per up to 40 changes one transaction of their
 * events, a record of each change (so a redelivery writes nothing) and their side's activity, read
 * first so that previous_attributes are true (docs/consistency.md, "An upload reaching the other sides").
 */
export class SideDelivery {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly conversationsTable: string,
    private readonly eventsTable: string,
    /** Where a direct contact's side is looked up (the index of a group's sides names them). */
    private readonly sides: ThreadSides,
    private readonly outbox: Outbox,
    private readonly clock: Clock,
    /** What members are shown of a file not yet clean (shared/scanning/model.ts). */
    private readonly scanning: Pick<ScanSettings, 'serveUnscannable'>,
  ) {}

  /**
   * One BatchGetItem of the delivered-change records per 100 changes.
   * Eventually consistent (half the price): a record not seen yet only
   * sends its change down the full path, whose conditions then find it;
   * keys DynamoDB leaves unprocessed stay in for the same reason.
   */
  async notYetDelivered(deliveries: readonly MemberDelivery[]): Promise<MemberDelivery[]> {
    const shown = deliveries.map((delivery) => ({
      ...delivery,
      changes: delivery.changes.filter((change) => showsAnything(change, this.scanning)),
    }));
    const keys = shown.flatMap(({ userId, changes }) => changes.map((change) => deliveredChangeKey(userId, change.id)));
    const recorded = new Set<string>();
    const id = (key: { pk: unknown; sk: unknown }) => `${String(key.pk)}\n${String(key.sk)}`;
    for (let start = 0; start < keys.length; start += BATCH_GET_MAX) {
      const { Responses } = await this.client.send(
        new BatchGetCommand({
          RequestItems: {
            [this.eventsTable]: {
              Keys: keys.slice(start, start + BATCH_GET_MAX),
              ...expressions({ projection: [PARTITION_KEY, SORT_KEY] }),
            },
          },
        }),
      );
      for (const item of Responses?.[this.eventsTable] ?? []) recorded.add(id(item as { pk: unknown; sk: unknown }));
    }
    return shown
      .map((delivery) => ({
        ...delivery,
        changes: delivery.changes.filter((change) => !recorded.has(id(deliveredChangeKey(delivery.userId, change.id)))),
      }))
      .filter((delivery) => delivery.changes.length > 0);
  }

  async deliver(delivery: MemberDelivery): Promise<boolean> {
    for (let start = 0; start < delivery.changes.length; start += CHANGES_PER_WRITE) {
      if (!(await this.deliverPart(delivery, delivery.changes.slice(start, start + CHANGES_PER_WRITE)))) return false;
    }
    return true;
  }

  private async deliverPart({ userId, counterpart, conversationId }: MemberDelivery, changes: ThreadChange[]): Promise<boolean> {
    const recorded = new Set<string>();
    return withFeed(async (retry) => {
      // Only what no earlier delivery recorded moves the side or makes one: a record delivered again after the
      // member deleted their side, or made a new one, leaves it as it is.
      const pending = changes.filter((change) => !recorded.has(change.id));
      const side = await this.side(userId, counterpart, conversationId, pending);
      if (!side) return false;
      const changeEvents = pending.map((change) => memberEvents(change, side.id, this.scanning));
      const shown = pending.filter((_, index) => (changeEvents[index]?.length ?? 0) > 0);
      const marks = shown.map(
        (change): TransactItem => ({
          Put: { TableName: this.eventsTable, Item: this.deliveredItem(userId, change.id), ...expressions({ condition: itemAbsent() }) },
        }),
      );
      const events = [...side.before, ...changeEvents.flat(), ...side.after];
      if (events.length === 0) return true;
      // A group's events are its members' alone: a reader whose token no longer lists it reads them redacted.
      const feed = await this.outbox.append(userId, events, counterpart.kind === 'group' ? counterpart.id : null);
      const items = [...side.items, ...marks, ...feed.items];
      const outcome = await transactWrite(this.client, items);
      if (outcome.committed) return true;
      // Changes recorded by an earlier delivery of their records: left out. The side or the head moved: read again.
      for (const [index, change] of shown.entries()) if (outcome.conditionFailed[side.items.length + index]) recorded.add(change.id);
      return retry;
    });
  }

  /**
   * The member's side as it is now, and what the write does to it: the
   * activity of the latest upload among `pending` (an update with
   * conversation.updated, or a check that it is still there), or its
   * creation by it; undefined when they hold none and this write makes none.
   */
  private async side(
    userId: string,
    counterpart: Counterpart,
    named: string | undefined,
    pending: ThreadChange[],
  ): Promise<{ id: string; items: TransactItem[]; before: EventDraft[]; after: EventDraft[] } | undefined> {
    const at = latestUpload(pending);
    const id = named ?? (await this.sides.sideOf(userId, counterpart));
    // Read even when no upload moves it: the events name the side only while it is there.
    const activity = id
      ? new ConversationActivity(this.client, this.conversationsTable, userId, id, { kind: 'activity', at: at ?? 0 })
      : undefined;
    const stored = await activity?.read();
    if (id && activity && stored) {
      if (at === undefined) return { id, items: [], before: [], after: [] };
      const moved = activity.recorded(stored, this.clock(), null);
      return { id, items: [moved.item], before: [], after: moved.events };
    }
    const firstUpload = pending.find((change) => change.kind === 'created');
    // A group's member, or a direct contact whom no new upload here reaches, holds no side to show these in.
    if (counterpart.kind === 'group' || !firstUpload || at === undefined) return undefined;
    // The same id for every delivery of this upload; the uniqueness record keeps a second side from being made.
    const conversation: Conversation = {
      ...newConversation(idWithUlidOf('conv', firstUpload.record.id), counterpart, at),
      last_active_at: at,
    };
    const items = creationItems(this.conversationsTable, userId, conversation);
    return { id: conversation.id, items, before: [createdEvent('conversation', conversation, null)], after: [] };
  }

  /** Kept as long as the events it guards: a record delivered again within that time is found recorded. */
  private deliveredItem(userId: string, changeId: string): Record<string, unknown> {
    return { ...deliveredChangeKey(userId, changeId), [EXPIRES_AT]: this.clock() + EVENT_RETENTION_SECONDS };
  }
}
