import { parseArgs } from 'node:util';
import { groupsClaimName, groupsOfClaim } from '../../shared/auth/groups.js';
import { signToken } from '../../shared/auth/tokens.js';
import { MAX_USER_ID_BYTES } from '../../shared/dynamo/keys.js';
import { readLocalSecret } from './server.js';
import { readLocalSettings } from './server-settings.js';

// `npm run -s token -- <user-id> [--ttl <seconds>] [--groups a,b]`: a token the local server accepts.
const USAGE = 'usage: npm run -s token -- <user-id> [--ttl <seconds>] [--groups <group-id>,<group-id>...]';
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { ttl: { type: 'string', default: '3600' }, groups: { type: 'string' } },
});
const userId = positionals[0];
const ttl = Number(values.ttl);
if (!userId || !Number.isSafeInteger(ttl) || ttl <= 0) {
  console.error(USAGE);
  process.exit(2);
}
// The authorizer would refuse the token (401 token_invalid): say so now rather than mint it.
if (Buffer.byteLength(userId, 'utf8') > MAX_USER_ID_BYTES) {
  console.error(`a user id is at most ${MAX_USER_ID_BYTES} UTF-8 bytes`);
  process.exit(2);
}
// `--groups ''` is a token that lists no groups (an empty claim), unlike no --groups (no claim).
const groups = values.groups === undefined ? undefined : values.groups.split(',').filter((id) => id !== '');
const read = groupsOfClaim(groups);
if ('refused' in read) {
  console.error(read.refused);
  process.exit(2);
}
// The claim the local server's authorizer reads: GROUPS_CLAIM of this environment, as npm start sees it.
const groupsClaim = groupsClaimName(process.env.GROUPS_CLAIM);
console.log(
  await signToken(readLocalSecret(readLocalSettings(process.env).dataDirectory), userId, { ttlSeconds: ttl, groups, groupsClaim }),
);
