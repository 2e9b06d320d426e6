import { describe, expect, it } from 'vitest';
import { eventItem, storedEventOf } from '../../../shared/events/item.js';
import { type ApiEvent, shownTo } from '../../../shared/events/model.js';

/**
 * Who reads a group's events (docs/api.md): the stored item keeps the group
 * beside the event, and the event is shown whole to a token that lists that
 * group (or for an event of no group), else redacted in place.
 */
const event: ApiEvent = {
  id: 'evt_000000075B7M2Q8R4T6V9X1Z',
  type: 'attachment.updated',
  created_at: 1_767_225_800,
  data: {
    object: { id: 'att_01HZY3M2V7X9Z1B3D5F7H9K1MN', filename: 'secret.txt', uploaded_by: 'alice', message_id: 'm1' },
    previous_attributes: { filename: 'draft.txt' },
  },
  request_id: null,
};

describe('an event of a group', () => {
  it('is stored with the group beside it, the event text unchanged, and read back with it', () => {
    const item = eventItem({ user: 'bob', group: 'team' }, 7, event);
    expect(item.group_id).toBe('team');
    expect(JSON.parse(item.event as string)).toEqual(event);
    expect(storedEventOf(item)).toEqual({ event, group: 'team' });
  });

  it('is whole to a token that lists the group, and to every token when it has none (own events, direct threads, events stored before)', () => {
    expect(shownTo(new Set(['other', 'team']), { event, group: 'team' })).toEqual(event);
    const ungrouped = eventItem({ user: 'bob', group: null }, 7, event);
    expect(ungrouped).not.toHaveProperty('group_id');
    expect(shownTo(new Set(), storedEventOf(ungrouped))).toEqual(event);
  });

  it('keeps only its id, type and time for any other token, and says nothing of the change', () => {
    for (const groups of [new Set<string>(), new Set(['other']), new Set(['Team', 'team '])]) {
      const shown = shownTo(groups, { event, group: 'team' });
      expect(shown).toEqual({
        id: event.id,
        type: event.type,
        created_at: event.created_at,
        data: { object: { redacted: true } },
        request_id: null,
      });
      expect(JSON.stringify(shown)).not.toMatch(/att_|secret|draft|alice|m1/);
    }
  });
});
