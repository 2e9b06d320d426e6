import { parseArgs } from 'node:util';
import { signToken } from '../../shared/auth/tokens.js';
import { MAX_USER_ID_BYTES } from '../../shared/dynamo/keys.js';
import { readLocalSecret } from './server.js';
import { readLocalSettings } from './settings.js';

// `npm run -s token -- <user-id> [--ttl <seconds>]`: a token the local server accepts.
const { positionals, values } = parseArgs({ allowPositionals: true, options: { ttl: { type: 'string', default: '3600' } } });
const userId = positionals[0];
const ttl = Number(values.ttl);
if (!userId || !Number.isSafeInteger(ttl) || ttl <= 0) {
  console.error('usage: npm run -s token -- <user-id> [--ttl <seconds>]');
  process.exit(2);
}
// The authorizer would refuse the token (401 token_invalid): say so now rather than mint it.
if (Buffer.byteLength(userId, 'utf8') > MAX_USER_ID_BYTES) {
  console.error(`a user id is at most ${MAX_USER_ID_BYTES} UTF-8 bytes`);
  process.exit(2);
}
console.log(await signToken(readLocalSecret(readLocalSettings(process.env).dataDirectory), userId, ttl));
