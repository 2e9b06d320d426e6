import { Composition, dynamo } from '../../shared/app.js';
import { readConfig } from '../../shared/config.js';
import { backfillActivityPlaces } from '../../shared/conversations/activity-backfill.js';

// `npm run backfill-activity`: the conversations table of this environment's configuration
// (CONVERSATIONS_TABLE, AWS_REGION, DYNAMODB_ENDPOINT; docs/deploying.md) gets the activity
// place of every conversation written before the activity order, with the caller's credentials.
const composition = new Composition(readConfig(process.env));
try {
  const { scanned, written } = await backfillActivityPlaces(composition.use(dynamo), composition.config.conversationsTable);
  console.log(`${composition.config.conversationsTable}: ${scanned} items scanned, ${written} conversations given their activity place`);
} finally {
  composition.destroy();
}
