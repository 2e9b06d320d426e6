import { parameterInvalid } from '../http/errors.js';
import { clientId, type ParamParser } from '../http/params.js';
import { cursor, limit } from '../pagination.js';
import { isEventId } from './ids.js';
import { EVENT_TYPES, type EventResource, type EventType, resourceOf, type TypeFilter } from './model.js';

const RESOURCES: EventResource[] = [...new Set(EVENT_TYPES.map(resourceOf))];

/** `type`: one of the types, or `<resource>.*` for every type of a resource. */
const type: ParamParser<TypeFilter> = (value, name) => {
  if (typeof value === 'string') {
    if ((EVENT_TYPES as readonly string[]).includes(value)) return { kind: 'exact', type: value as EventType };
    const resource = RESOURCES.find((candidate) => value === `${candidate}.*`);
    if (resource) return { kind: 'resource', resource };
  }
  throw parameterInvalid(name, `${name} must be one of ${[...EVENT_TYPES, ...RESOURCES.map((resource) => `${resource}.*`)].join(', ')}`);
};

/** The parameters of the events list, and how each is read. */
export const listParams = {
  limit,
  /** A side of a large group: that thread's feed (docs/api.md, "Sharing", large groups). */
  conversation_id: clientId,
  starting_after: cursor(isEventId),
  ending_before: cursor(isEventId),
  type,
};
