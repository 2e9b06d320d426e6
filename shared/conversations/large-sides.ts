import type { Groups } from '../auth/groups.js';
import type { Page, PageRequest } from '../pagination.js';
import { fromItem, type Item } from './item-codec.js';
import type { ConversationFilter } from './model.js';
import { isUnread } from './read-state.js';

/**
 * A side of a large group as a member whose token lists the group sees it
 * (docs/api.md, "Sharing", large groups): its last_active_at is the
 * thread's when that is later than the side's creation, unless the side's
 * own is later still (an upload delivered to it before the switch, or the
 * member's own upload, which writes their side before the fan-out writes
 * the thread).
 */
export function withThreadActivity(item: Item, threadActiveAt: number | null | undefined): Item {
  if (typeof threadActiveAt !== 'number' || threadActiveAt <= (item.created_at as number)) return item;
  if (typeof item.last_active_at === 'number' && item.last_active_at >= threadActiveAt) return item;
  return { ...item, last_active_at: threadActiveAt };
}

/** Whether a side is read with its thread's activity: a large group's, for a token that lists the group. */
export const showsThread = (item: Item, largeSideKey: string, groups: Groups): boolean =>
  typeof item[largeSideKey] === 'string' && typeof item.group_id === 'string' && groups.has(item.group_id);

/** The list's filters, judged in memory on a side read apart from the list's Query (a large side, with its thread's activity). */
export function matchesFilter(item: Item, filter: ConversationFilter, now: number): boolean {
  const shown = fromItem(item, now);
  const checks: [boolean | string | undefined, boolean | string | null][] = [
    [filter.muted, shown.is_muted],
    [filter.archived, shown.archived_at !== null],
    [filter.pinned, shown.is_pinned],
    [filter.unread, isUnread(shown)],
    [filter.group_id, shown.group_id],
    [filter.contact_id, shown.contact_id],
  ];
  return checks.every(([wanted, value]) => wanted === undefined || wanted === value);
}

/**
 * A page read with `limit + ids.size` items, less the conversations `ids` names (read apart): the
 * `limit` nearest the cursor (forwards the head, backwards the tail); `has_more` exact, since the
 * items left out are at most as many as were read beyond `limit`.
 */
export function leftOut(read: Page<Item>, ids: ReadonlySet<string>, page: PageRequest): Page<Item> {
  if (ids.size === 0) return read;
  const kept = read.data.filter((item) => !ids.has(item.id as string));
  const data = page.endingBefore !== undefined ? kept.slice(-page.limit) : kept.slice(0, page.limit);
  return { has_more: read.has_more || kept.length > page.limit, data };
}
