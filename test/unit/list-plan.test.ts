import { describe, expect, it } from 'vitest';
import { listPlan } from '../../shared/conversations/list-plan.js';
import { flagKey, groupKey } from '../../shared/dynamo/keys.js';

describe('listPlan', () => {
  it('reads the table itself when nothing is filtered', () => {
    expect(listPlan('u', {})).toEqual({ residual: {} });
  });

  it('queries the index of a single filter with nothing left to filter', () => {
    expect(listPlan('u', { archived: false })).toEqual({
      index: { name: 'by_archived', partitionKey: 'archived_key', value: flagKey('u', false) },
      residual: {},
    });
  });

  it('prefers an id filter, then true flags, then false flags, and filters the rest', () => {
    const plan = listPlan('u', { muted: false, pinned: true, group_id: 'g' });
    expect(plan.index).toEqual({ name: 'by_group', partitionKey: 'group_key', value: groupKey('u', 'g') });
    expect(plan.residual).toEqual({ pinned_key: flagKey('u', true), muted_key: flagKey('u', false) });
    expect(listPlan('u', { muted: false, archived: true }).index?.name).toBe('by_archived');
  });
});
