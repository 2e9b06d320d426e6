import { join } from 'node:path';
import { signToken } from '../../shared/auth/tokens.js';
import { JavaMissing } from './dynamodb.js';
import { REPOSITORY_ROOT, startLocalApi } from './server.js';

// `npm start`: the API on http://127.0.0.1:3000 with its data under .data/.
const api = await startLocalApi({
  host: process.env.HOST ?? '127.0.0.1',
  port: Number(process.env.PORT ?? 3000),
  dataDirectory: join(REPOSITORY_ROOT, '.data'),
  // Fixed ports let `sam local` reach the same data (infra/sam-env.json); default: free ones.
  dynamodbPort: Number(process.env.DYNAMODB_PORT ?? 0),
  s3Port: Number(process.env.S3_PORT ?? 0),
}).catch((error: unknown) => {
  // One line that says what to install, not a stack trace.
  if (error instanceof JavaMissing) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
});
const token = await signToken(api.authSecret, 'user_local', { ttlSeconds: 24 * 3600 });

console.log(`Messaging API listening on ${api.url}/v1
DynamoDB (DynamoDB Local) at ${api.dynamodbEndpoint}, S3 (s3rver) at ${api.s3Endpoint}
OpenAPI document (no token needed): ${api.url}/openapi.json

A token for user "user_local", valid 24 hours (npm run -s token -- <user-id> mints others):
  export TOKEN=${token}
Group members: npm run -s token -- <user-id> --groups team,family (the groups claim; group conversations need it)

Try:
  curl -s -X POST ${api.url}/v1/conversations -H "Authorization: Bearer $TOKEN" -d contact_id=alice
`);

// DynamoDB Local (a JVM) stops with the server; if this process dies unannounced, its guard stops it.
const stop = async () => {
  await api.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
