import { randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { signToken } from '../../shared/auth/tokens.js';
import type { SmokeUser } from './check.js';

/** Starts every name a run gives (user ids, contact ids, filenames): unique per run, and says where it came from. */
export function runMarker(now = Date.now()): string {
  return `smoke-${now.toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** Long enough for the slowest run (the cleanup's deadline included), short enough not to matter once it is over. */
const TOKEN_TTL_SECONDS = 3600;

/** Two throwaway users of this run, with tokens signed with the stage's HS256 key. */
export async function throwawayUsers(secret: string, marker: string): Promise<{ user: SmokeUser; other: SmokeUser }> {
  const user = `${marker}-a`;
  const other = `${marker}-b`;
  return {
    user: { label: user, id: user, token: await signToken(secret, user, { ttlSeconds: TOKEN_TTL_SECONDS }) },
    other: { label: other, id: other, token: await signToken(secret, other, { ttlSeconds: TOKEN_TTL_SECONDS }) },
  };
}

/** A user whose token the caller gave: named by its `sub` when it can be read. */
export function givenUser(token: string): SmokeUser {
  let subject: unknown;
  try {
    subject = decodeJwt(token).sub;
  } catch {
    subject = undefined;
  }
  const id = typeof subject === 'string' ? subject : undefined;
  return { label: id ?? 'the --token user', id, token };
}
