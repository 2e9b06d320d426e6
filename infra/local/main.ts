import { signToken } from '../../shared/auth/tokens.js';
import { DataDirectoryInUse } from './data-lock.js';
import { JavaMissing } from './dynamodb.js';
import { startLocalApi } from './server.js';
import { type LocalSettings, readLocalSettings } from './server-settings.js';

// `npm start`: the API on http://127.0.0.1:3000 with its data under .data/.
const settings = readLocalSettings(process.env);
const api = await startLocalApi({
  host: settings.host,
  port: settings.port,
  dataDirectory: settings.dataDirectory,
  // Fixed ports let `sam local` reach the same data (infra/stack/sam-env.json); default: free ones.
  dynamodbPort: settings.dynamodbPort,
  s3Port: settings.s3Port,
}).catch((error: unknown) => {
  // One line that says what to do (install Java, stop the other server), not a stack trace.
  if (error instanceof JavaMissing || error instanceof DataDirectoryInUse) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
});
// DynamoDB Local (a JVM) stops with the server, and the data folder is released; if this process dies
// unannounced, its guard stops the JVM and the next server takes the folder over. Before the ready line, so that
// whoever waits for that line may stop the server at once.
const stop = async () => {
  await api.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
const token = await signToken(api.authSecret, 'user_local', { ttlSeconds: 24 * 3600 });

console.log(`Messaging API listening on ${api.url}/v1
DynamoDB at ${api.dynamodbEndpoint}, S3 at ${api.s3Endpoint}, data under ${settings.dataDirectory}
Stream consumers (the cleanup of deleted conversations' attachments and of files): ${settings.streamConsumers ? 'on' : 'off (LOCAL_STREAM_CONSUMERS=off)'}
Events for operators: ${eventsForwarding(settings)}
OpenAPI document (no token needed): ${api.url}/openapi.json

A token for user "user_local", valid 24 hours (npm run -s token -- <user-id> mints others):
  export TOKEN=${token}
Group members: npm run -s token -- <user-id> --groups team,family (the groups claim; group conversations need it)

Try:
  curl -s -X POST ${api.url}/v1/conversations -H "Authorization: Bearer $TOKEN" -d contact_id=alice
`);

/** Where the operators' events go locally, in one line of the banner. */
function eventsForwarding({ eventsForwardUrl, streamConsumers }: LocalSettings): string {
  if (!eventsForwardUrl) return 'not forwarded (EVENTS_FORWARD_URL sends them to a receiver of yours, docs/events-for-operators.md)';
  if (!streamConsumers) return `not forwarded to ${eventsForwardUrl.href}: LOCAL_STREAM_CONSUMERS=off reads no stream`;
  return `POSTed to ${eventsForwardUrl.href} in EventBridge's envelope, retried until a 2xx`;
}
