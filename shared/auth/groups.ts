import { CLIENT_ID_RULE, isClientId } from '../text.js';

/**
 * Group membership comes from the token (docs/api.md, "Groups"): the claim named
 * by GROUPS_CLAIM holds the user's group ids. This module is the one place
 * that knows the claim's rule and how the authorizer hands the groups to the
 * functions; it imports nothing heavier than the client id rule, so both the
 * authorizer's bundle and every function's can carry it.
 */
export type Groups = ReadonlySet<string>;

export const DEFAULT_GROUPS_CLAIM = 'groups';
export const MAX_GROUPS = 256;

/**
 * The groups a token's claim holds, or why it is refused. Absent: no groups.
 * Present: a JSON array of at most MAX_GROUPS client ids. A duplicate is
 * folded, not refused: membership is a set, and an identity provider that
 * repeats a group should not lock its user out.
 */
export function groupsOfClaim(claim: unknown): { groups: Groups } | { refused: string } {
  if (claim === undefined) return { groups: new Set() };
  if (!Array.isArray(claim)) return { refused: 'Token groups must be a JSON array of group ids' };
  if (claim.length > MAX_GROUPS) return { refused: `Token groups must hold at most ${MAX_GROUPS} group ids` };
  if (!claim.every((id) => typeof id === 'string' && isClientId(id))) {
    return { refused: `Token groups must each be ${CLIENT_ID_RULE}` };
  }
  return { groups: new Set(claim as string[]) };
}

/**
 * A claim name GROUPS_CLAIM may give: a top-level claim of the token (a dot
 * is part of the name, not a path), not one of the registered claims the
 * verifier already reads for other purposes.
 */
const REGISTERED_CLAIMS = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti']);

export function groupsClaimName(raw: string | undefined): string {
  if (raw === undefined || raw === '') return DEFAULT_GROUPS_CLAIM;
  if (!/^[^\s\p{Cc}]{1,256}$/u.test(raw) || REGISTERED_CLAIMS.has(raw)) {
    throw new Error(
      `GROUPS_CLAIM must name a claim (1 to 256 characters without whitespace or control characters, not a registered claim), got ${JSON.stringify(raw)}`,
    );
  }
  return raw;
}

/**
 * Authorizer context values are strings (API Gateway stringifies numbers and
 * booleans and refuses objects and arrays), so the groups travel as one JSON
 * array in a string. It is never longer than the claim it came from: the same
 * escapes, duplicates folded (test/unit/auth/groups-context.test.ts).
 */
export const GROUPS_CONTEXT_KEY = 'groups';

export function encodeGroups(groups: Groups): string {
  return JSON.stringify([...groups]);
}

/**
 * The groups as the authorizer encoded them, or undefined when the value is
 * not what encodeGroups makes of a valid claim (a broken authorizer, or a
 * context from one that predates groups).
 */
export function decodeGroups(value: unknown): Groups | undefined {
  if (typeof value !== 'string') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  const read = groupsOfClaim(parsed);
  return parsed !== undefined && 'groups' in read ? read.groups : undefined;
}
