import { describe, expect, it } from 'vitest';
import { type Condition, listPlan } from '../../../shared/conversations/list-plan.js';
import { flagKey, groupKey } from '../../../shared/dynamo/keys.js';

const NOW = 1_800_000_000;

/** A condition with its values written in, so tests do not depend on placeholder numbering. */
const rendered = (condition: Condition | undefined) =>
  condition?.expression
    .replace(/:r\w+/g, (placeholder) => JSON.stringify(condition.values[placeholder]))
    .replace(/#r\w+/g, (placeholder) => condition.names[placeholder]!);

describe('listPlan', () => {
  it('reads the table itself when nothing is filtered', () => {
    expect(listPlan('u', {}, NOW)).toEqual({ residual: [], expiredMutes: false });
  });

  it('queries the index of a single filter with nothing left to filter', () => {
    expect(listPlan('u', { archived: false }, NOW)).toEqual({
      index: { name: 'by_archived', partitionKey: 'archived_key', value: flagKey('u', false) },
      residual: [],
      expiredMutes: false,
    });
    expect(listPlan('u', { unread: true }, NOW)).toEqual({
      index: { name: 'by_unread', partitionKey: 'unread_key', value: flagKey('u', true) },
      residual: [],
      expiredMutes: false,
    });
  });

  it('prefers an id filter, then true flags, then false flags, and filters the rest', () => {
    const plan = listPlan('u', { muted: false, pinned: true, group_id: 'g', unread: false }, NOW);
    expect(plan.index).toEqual({ name: 'by_group', partitionKey: 'group_key', value: groupKey('u', 'g') });
    expect(plan.residual.map(rendered)).toEqual([
      'pinned_key = "u#1"',
      `(muted_key <> "u#1" OR muted_until <= ${NOW})`,
      'unread_key = "u#0"',
    ]);
    expect(listPlan('u', { muted: false, archived: true }, NOW).index?.name).toBe('by_archived');
    expect(listPlan('u', { unread: true, archived: false }, NOW).index?.name).toBe('by_unread');
  });

  it('reads muted=true from by_muted but keeps only mutes not over at the time of the request', () => {
    const plan = listPlan('u', { muted: true }, NOW);
    expect(plan.index?.value).toBe(flagKey('u', true));
    expect(rendered(plan.own)).toBe(`(attribute_not_exists(muted_until) OR muted_until > ${NOW})`);
    expect(plan.residual).toEqual([]);
    expect(plan.expiredMutes).toBe(false);
  });

  it('reads muted=false from by_muted and merges in the mutes over by now', () => {
    const plan = listPlan('u', { muted: false, pinned: false }, NOW);
    expect(plan.index?.name).toBe('by_pinned');
    expect(plan.expiredMutes).toBe(false);
    const muted = listPlan('u', { muted: false, archived: false }, NOW);
    expect(muted.index).toEqual({ name: 'by_muted', partitionKey: 'muted_key', value: flagKey('u', false) });
    expect(muted.own).toBeUndefined();
    expect(muted.expiredMutes).toBe(true);
    expect(muted.residual.map(rendered)).toEqual(['archived_key = "u#0"']);
  });
});
