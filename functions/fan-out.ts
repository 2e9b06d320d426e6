import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { type Composition, fanOut, previewQueue, scanStore, scanTimers } from '../shared/app.js';
import { fromItem } from '../shared/attachments/dynamo-store.js';
import type { ThreadChange } from '../shared/conversations/fan-out.js';
import { ATTACHMENT_SK } from '../shared/dynamo/keys.js';
import { logger } from '../shared/observability.js';
import { type ScanTimer, settleKeptOrTime } from '../shared/scanning/recorder.js';
import { streamConsumer, type Unfinished } from '../shared/stream-consumer.js';
import { addedItem, removedItem, tableOf } from '../shared/stream-records.js';

/**
 * Moves every change of an attachment in a thread (an upload, a rename, a
 * removal) to the thread's other members, from the attachments table's
 * stream (shared/conversations/fan-out.ts). Each member's write records the
 * changes it delivered, so records delivered again change nothing, and a
 * group's members already reached are passed over by one cheap read. A
 * failure stops the batch at the first record of the thread that failed:
 * the event source mapping retries from there (streamConsumer's partial
 * batch response), then hands it to the dead-letter queue and its alarm;
 * the local stream poller retries until it succeeds.
 */
async function spread(event: DynamoDBStreamEvent, composition: Composition): Promise<Unfinished | undefined> {
  const records = new Map<string, DynamoDBRecord>();
  const changes = event.Records.filter((record) => tableOf(record) === composition.config.attachmentsTable).flatMap((record) => {
    const change = threadChange(record);
    for (const { id } of change) records.set(id, record);
    return change;
  });
  // Before any delivery: a failure here retries the batch whole, and a request queued twice is settled once.
  await queuePreviews(event.Records, composition);
  await settleKeptScans(event.Records, composition);
  if (changes.length === 0) return undefined;
  const { reached, threads, skipped, unfinished } = await composition.use(fanOut).deliver(changes);
  logger.info('attachment changes reached their threads', {
    changes: changes.length,
    members: reached,
    large_threads: threads,
    members_reached_before: skipped,
  });
  if (!unfinished) return undefined;
  const record = records.get(unfinished.change.id);
  if (!record) throw new Error(`no stream record of the batch holds change ${unfinished.change.id}`);
  return { record, error: unfinished.error };
}

/** The record as a change of an attachment placed in a thread; none for other items (orphan-file markers) or unplaced uploads. */
function threadChange(record: DynamoDBRecord): ThreadChange[] {
  const id = record.eventID;
  const after = addedItem(record);
  const before = removedItem(record);
  const sk = (after ?? before)?.sk;
  if (!id || sk !== ATTACHMENT_SK) return [];
  if (record.eventName === 'INSERT' && after) return placed({ kind: 'created', id, record: fromItem(after) });
  if (record.eventName === 'MODIFY' && after && before)
    return placed({ kind: 'renamed', id, record: fromItem(after), before: fromItem(before) });
  if (record.eventName === 'REMOVE' && before) return placed({ kind: 'removed', id, record: fromItem(before) });
  return [];
}

/**
 * Each new record whose preview is pending goes to the preview worker's
 * queue (docs/decisions.md, "Previews"): the record exists by then, so the
 * worker never waits for it, and the attachments stream keeps two readers.
 */
async function queuePreviews(records: readonly DynamoDBRecord[], composition: Composition): Promise<void> {
  const requests = records.flatMap((record) => {
    const after = record.eventName === 'INSERT' && tableOf(record) === composition.config.attachmentsTable ? addedItem(record) : undefined;
    if (after?.sk !== ATTACHMENT_SK || fromItem(after).preview?.status !== 'pending') return [];
    return [{ attachment_id: after.pk as string, file_key: after.file_key as string }];
  });
  if (requests.length === 0) return;
  await composition.use(previewQueue).send(requests.map((request) => ({ body: JSON.stringify(request) })));
  logger.info('previews queued', { attachment_ids: requests.map((request) => request.attachment_id) });
}

/**
 * Each new record still pending its scan: a result that came first (an
 * upload session's object exists before its record) settles it now, else its
 * timer starts (settleKeptOrTime), due when its scan timeout is. The recorder
 * kept the result before looking for the record, and this runs after the
 * record was written, so one of the two finds the other. A timer that could
 * not be sent fails the batch, which the stream delivers again.
 */
async function settleKeptScans(records: readonly DynamoDBRecord[], composition: Composition): Promise<void> {
  const timers: ScanTimer[] = [];
  for (const record of records) {
    const after = record.eventName === 'INSERT' && tableOf(record) === composition.config.attachmentsTable ? addedItem(record) : undefined;
    if (after?.sk !== ATTACHMENT_SK || after.scan_status !== 'pending') continue;
    const outcome = await settleKeptOrTime(composition.use(scanStore), fromItem(after), composition.config.scanning.timeoutSeconds);
    if (typeof outcome === 'object') timers.push(outcome);
    else logger.info('new record pending its scan settled by a kept result', { attachment_id: after.pk, outcome });
  }
  if (timers.length === 0) return;
  await composition.use(scanTimers).start(timers);
  logger.info('scan timers started', { file_keys: timers.map((timer) => timer.file_key) });
}

const placed = (change: ThreadChange): ThreadChange[] => (change.record.placement ? [change] : []);

export const handler = streamConsumer('FanOut', spread);
