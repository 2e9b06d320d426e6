import type { SQSRecord } from 'aws-lambda';
import { type Composition, fanOut } from '../shared/app.js';
import { settlingGroupOf } from '../shared/conversations/settling-timers.js';
import { logger } from '../shared/observability.js';
import { queueConsumer } from '../shared/queue-consumer.js';

/**
 * A large thread's settling sweep (docs/decisions.md, "Large groups"), fed by
 * the settling timers' queue, which the fan-out fills as a group's thread
 * becomes large, delayed INDEX_SETTLE_SECONDS: each side by_thread had not
 * shown the switch is handed every change the switch passed over, then
 * marked. A backend's failure hands the message back to the queue, then its
 * dead-letter queue and alarm. A timer that comes again changes nothing.
 */
async function settle(message: SQSRecord, composition: Composition): Promise<void> {
  const groupId = settlingGroupOf(message.body);
  if (!groupId) {
    logger.error('not a settling timer; dropped', { body: message.body.slice(0, 200) });
    return;
  }
  const { settled, reached, skipped } = await composition.use(fanOut).settle(groupId);
  logger.info('large thread settled', { group_id: groupId, settled, members: reached, members_reached_before: skipped });
}

export const handler = queueConsumer('LargeThreadSettling', settle);
