import { type Composition, dynamo, outbox } from '../shared/app.js';
import { DynamoConversationStore } from '../shared/conversations/dynamo-store.js';
import type { ConversationFilter } from '../shared/conversations/model.js';
import { type Population, population } from './population.js';
import { putConversations } from './seed-conversations.js';
import { round } from './stats.js';

/**
 * What a list page costs as a user's conversations grow: items read (the
 * Query's ScannedCount, summed over the queries of the page, as the store
 * reports it) and the index it used, for each filter alone and for pairs.
 */
export const PAGE_LIMIT = 10;

export interface ListCostFigure {
  filter: string;
  /** The most a page may read: limit + 1 for one indexed filter, else the chosen index's set. */
  bound: Record<number, number>;
  index: string;
  itemsRead: Record<number, number>;
  queries: Record<number, number>;
}

export interface GrowthFigures {
  sizes: number[];
  seedSeconds: Record<number, number>;
  pages: ListCostFigure[];
}

type Counts = Population['counts'];

interface Case {
  filter: ConversationFilter;
  /** The set the plan's index walks when a residual filter rejects most of it. */
  bound: (counts: Counts, size: number, ended: number) => number;
  /** A name when the filter alone does not say what is measured. */
  label?: string;
}

const single = () => PAGE_LIMIT + 1;

function cases(knownContact: string, knownGroup: string): Case[] {
  return [
    { filter: {}, bound: single },
    // The first muted list after mutes ended also reads those (by_mute_end) and writes them back.
    { filter: { muted: false }, bound: (_counts, _size, ended) => PAGE_LIMIT + 1 + ended, label: 'muted=false, first after mutes ended' },
    { filter: { muted: true }, bound: single },
    { filter: { muted: false }, bound: single },
    { filter: { unread: true }, bound: single },
    { filter: { unread: false }, bound: single },
    { filter: { archived: true }, bound: single },
    { filter: { archived: false }, bound: single },
    { filter: { pinned: true }, bound: single },
    { filter: { pinned: false }, bound: single },
    { filter: { contact_id: knownContact }, bound: single },
    { filter: { group_id: knownGroup }, bound: single },
    { filter: { muted: true, archived: true }, bound: (counts) => counts.muted },
    { filter: { pinned: true, muted: false }, bound: (counts) => counts.pinned },
    { filter: { archived: false, muted: false }, bound: (counts, size) => size - counts.muted },
    { filter: { contact_id: knownContact, pinned: false }, bound: () => 1 },
    { filter: { unread: true, muted: false }, bound: (counts) => counts.unread },
    { filter: { muted: true, unread: false }, bound: (counts) => counts.muted + counts.endedMutes },
  ];
}

export async function measureListCost(composition: Composition, sizes: number[]): Promise<GrowthFigures> {
  const userId = 'user_growth';
  const table = composition.config.conversationsTable;
  const store = new DynamoConversationStore(composition.use(dynamo), table, composition.use(outbox));
  const counts: Counts = { muted: 0, endedMutes: 0, archived: 0, pinned: 0, group: 0, unread: 0 };
  const seedSeconds: Record<number, number> = {};
  const pages = new Map<string, ListCostFigure>();
  let seeded = 0;
  let known: { contact: string; group: string } | undefined;

  for (const size of [...sizes].sort((a, b) => a - b)) {
    const started = performance.now();
    const added = population(size - seeded, { seed: size, firstIndex: seeded });
    await putConversations(composition.use(dynamo), table, userId, added.conversations);
    for (const key of Object.keys(counts) as (keyof Counts)[]) counts[key] += added.counts[key];
    seedSeconds[size] = round((performance.now() - started) / 1000);
    seeded = size;
    known ??= {
      // Unpinned, so that the contact-and-unpinned pair has a match.
      contact: added.conversations.find((conversation) => conversation.contact_id && !conversation.is_pinned)!.contact_id!,
      group: added.conversations.find((conversation) => conversation.group_id)!.group_id!,
    };

    for (const { filter, bound, label } of cases(known.contact, known.group)) {
      const { page, cost } = await store.list(userId, filter, { limit: PAGE_LIMIT });
      if (page.data.length === 0) throw new Error(`Filter ${describe(filter)} found nothing: the population lacks it`);
      const name = label ?? describe(filter);
      const figure = pages.get(name) ?? { filter: name, index: cost.index, bound: {}, itemsRead: {}, queries: {} };
      figure.bound[size] = bound(counts, size, added.counts.endedMutes);
      figure.itemsRead[size] = cost.itemsRead;
      figure.queries[size] = cost.queries;
      pages.set(name, figure);
    }
  }
  return { sizes, seedSeconds, pages: [...pages.values()] };
}

export function describe(filter: ConversationFilter): string {
  const parts = Object.entries(filter).map(([name, value]) => `${name}=${typeof value === 'string' ? '<one>' : value}`);
  return parts.length > 0 ? parts.join('&') : '(none)';
}
