import { Composition, dynamo } from '../../shared/app.js';
import { readConfig } from '../../shared/config.js';
import { backfillActivityPlaces } from '../../shared/conversations/activity-backfill.js';

// `npm run backfill-activity`: the conversations table of this environment's configuration
// (CONVERSATIONS_TABLE, AWS_REGION, DYNAMODB_ENDPOINT; docs/deploying.md) gets the activity
// place of every conversation written before the activity order, with the caller's credentials.
const app = new Composition(readConfig(process.env));
try {
  const { scanned, written } = await backfillActivityPlaces(app.use(dynamo), app.config.conversationsTable);
  console.log(`${app.config.conversationsTable}: ${scanned} items scanned, ${written} conversations given their activity place`);
} finally {
  app.destroy();
}
