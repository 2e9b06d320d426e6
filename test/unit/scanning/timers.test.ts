import { describe, expect, it } from 'vitest';
import { SqsScanTimers, scanTimerOf } from '../../../shared/scanning/timers.js';
import type { QueueMessage } from '../../../shared/sqs.js';

/** The timers as the queue would take them: each message's body and delay. */
function sent(now: number) {
  const messages: QueueMessage[] = [];
  const timers = new SqsScanTimers({ send: async (batch) => void messages.push(...batch) }, () => now);
  return { timers, messages };
}

describe('scan timers', () => {
  it('are sent delayed by the time left until they are due, none for one already due (the fan-out was late)', async () => {
    const { timers, messages } = sent(1_000);
    await timers.start([
      { file_key: 'files/u/a/run', due_at: 1_900 },
      { file_key: 'files/u/b/run', due_at: 1_030 },
      { file_key: 'files/u/c/run', due_at: 400 },
    ]);
    expect(messages.map((message) => message.delaySeconds)).toEqual([900, 30, 0]);
    expect(messages.map((message) => scanTimerOf(message.body))).toEqual([
      { file_key: 'files/u/a/run', due_at: 1_900 },
      { file_key: 'files/u/b/run', due_at: 1_030 },
      { file_key: 'files/u/c/run', due_at: 400 },
    ]);
  });

  it('never ask SQS for more than its 900 s delay, whatever the clock says (the configuration caps the timeout there)', async () => {
    const { timers, messages } = sent(0);
    await timers.start([{ file_key: 'files/u/a/run', due_at: 5_000 }]);
    expect(messages[0]!.delaySeconds).toBe(900);
  });

  it('read no timer from a body that is not one', () => {
    for (const body of ['', 'null', '{"file_key":1,"due_at":2}', '{"file_key":"files/u/a/run"}', 'not json'])
      expect(scanTimerOf(body), body).toBeUndefined();
  });
});
