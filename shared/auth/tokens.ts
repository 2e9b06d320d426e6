import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify, SignJWT } from 'jose';
import { MAX_USER_ID_BYTES } from '../dynamo/keys.js';
import { isWellFormed, utf8Bytes } from '../text.js';
import { DEFAULT_GROUPS_CLAIM, type Groups, groupsOfClaim } from './groups.js';

/**
 * Access tokens are JWTs whose `sub` is the user. Two modes, each with its
 * algorithms pinned so that `alg: none` and HS/RS confusion cannot pass:
 * - HS256 with a shared secret (local default, simple deployments);
 * - RS256/ES256 keys from a JWKS URL (any OIDC issuer such as Cognito).
 * In both, the claim named `groupsClaim` holds the user's groups (groups.ts).
 */
export type VerifierSettings =
  | { mode: 'secret'; secret: string; issuer?: string; audience?: string; groupsClaim: string }
  | { mode: 'jwks'; jwksUrl: string; issuer?: string; audience?: string; groupsClaim: string };

/** Who a valid token speaks for: the user, and the groups the token lists. */
export interface TokenIdentity {
  userId: string;
  groups: Groups;
}

export type TokenFailure = 'token_invalid' | 'token_expired';

export class TokenRejected extends Error {
  constructor(
    readonly code: TokenFailure,
    message: string,
  ) {
    super(message);
    this.name = 'TokenRejected';
  }
}

export interface TokenVerifier {
  verify(token: string): Promise<TokenIdentity>;
}

const SECRET_ALGORITHMS = ['HS256'];
const JWKS_ALGORITHMS = ['RS256', 'ES256'];

export function tokenVerifier(settings: VerifierSettings): TokenVerifier {
  const key: Uint8Array | JWTVerifyGetKey =
    settings.mode === 'secret' ? new TextEncoder().encode(settings.secret) : createRemoteJWKSet(new URL(settings.jwksUrl));
  const options = {
    algorithms: settings.mode === 'secret' ? SECRET_ALGORITHMS : JWKS_ALGORITHMS,
    requiredClaims: ['exp', 'sub'],
    ...(settings.issuer ? { issuer: settings.issuer } : {}),
    ...(settings.audience ? { audience: settings.audience } : {}),
  };
  return {
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, key, options);
        if (typeof payload.sub !== 'string' || payload.sub === '') throw new TokenRejected('token_invalid', 'Token has no subject');
        if (!isWellFormed(payload.sub) || utf8Bytes(payload.sub) > MAX_USER_ID_BYTES) {
          // The subject becomes the user's partition key and part of index keys: it must fit them (keys.ts).
          throw new TokenRejected('token_invalid', `Token subject must be well-formed Unicode of at most ${MAX_USER_ID_BYTES} UTF-8 bytes`);
        }
        // Own properties only: a claim named `constructor` must not find Object's.
        const read = groupsOfClaim(Object.hasOwn(payload, settings.groupsClaim) ? payload[settings.groupsClaim] : undefined);
        if ('refused' in read) throw new TokenRejected('token_invalid', read.refused);
        return { userId: payload.sub, groups: read.groups };
      } catch (error) {
        if (error instanceof TokenRejected) throw error;
        if (error instanceof errors.JWTExpired) throw new TokenRejected('token_expired', 'Token has expired');
        throw new TokenRejected('token_invalid', 'Token is invalid');
      }
    },
  };
}

export interface TokenClaims {
  ttlSeconds?: number;
  /** Put in the claim `groupsClaim` (default `groups`); none: the claim is left out. */
  groups?: readonly string[];
  groupsClaim?: string;
}

/** Signs an HS256 token, as `npm run token` and the tests do. */
export async function signToken(
  secret: string,
  userId: string,
  { ttlSeconds = 3600, groups, groupsClaim = DEFAULT_GROUPS_CLAIM }: TokenClaims = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(groups === undefined ? {} : { [groupsClaim]: [...groups] })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(userId)
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .sign(new TextEncoder().encode(secret));
}
