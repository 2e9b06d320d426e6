import type { Groups } from './auth/groups.js';

/**
 * Who calls: the user the token names, the groups it grants, and the id of
 * the request, which the events its writes append record. The HTTP pipeline
 * builds one per request (shared/http/request.ts, `callerOf`) from what the
 * authorizer put in the request context, never from headers or body; the
 * services take it whole.
 */
export interface Caller {
  /** The token's `sub`. */
  readonly userId: string;
  /**
   * The groups the token lists. Read from the request context when first
   * asked for: a context without valid groups fails the calls that need them
   * (500), not the others (docs/decisions.md, "Read in one place").
   */
  readonly groups: Groups;
  /** The request's id, as API Gateway gave it. */
  readonly requestId: string;
}
