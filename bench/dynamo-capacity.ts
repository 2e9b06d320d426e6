import type { Composition } from '../shared/app.js';
import { dynamo } from '../shared/app.js';
import { eventsTable } from '../shared/dynamo/tables.js';
import { transactionWriteUnits } from './item-size.js';

/**
 * What a Composition's DynamoDB calls consume, as AWS bills it, for the cost table
 * (cost.ts) and the stream consumers' figures (consumers.ts): every call's
 * consumed capacity as the backend reports it (ReturnConsumedCapacity, asked
 * for by SDK middleware on the Composition's client, and taken out of the answer
 * again so the caller sees what it always sees), with the events table's
 * transactional writes by AWS's rule from the items sent (item-size.ts),
 * which DynamoDB Local under-reports.
 */
export interface CapacityTally {
  /** Calls by command, without the `Command` suffix. */
  calls: Record<string, number>;
  readUnits: number;
  /** Write units as DynamoDB reported them, every table's. */
  reportedWriteUnits: number;
  /** The events table's share, as reported (by TableName: a transaction reports one entry per table). */
  eventsReadUnits: number;
  eventsReportedWriteUnits: number;
  /** The events table's write units by AWS's rule, from the items of the transactions that committed. */
  eventsWriteUnits: number;
  /** Items the calls wrote (a transaction's Put, Update and Delete; a batch's requests; one per single-item write) and read (as DynamoDB counts them: a Query's ScannedCount). */
  itemsWritten: number;
  itemsRead: number;
}

export const emptyCapacityTally = (): CapacityTally => ({
  calls: {},
  readUnits: 0,
  reportedWriteUnits: 0,
  eventsReadUnits: 0,
  eventsReportedWriteUnits: 0,
  eventsWriteUnits: 0,
  itemsWritten: 0,
  itemsRead: 0,
});

/** The write units billed: as reported, but the events table's by AWS's rule in place of DynamoDB Local's report. */
export const billedWriteUnits = (tally: CapacityTally): number =>
  tally.reportedWriteUnits - tally.eventsReportedWriteUnits + tally.eventsWriteUnits;

export const callCount = (tally: CapacityTally): number => Object.values(tally.calls).reduce((sum, count) => sum + count, 0);

/** The events table's local indexes: each event is written to them too. */
const EVENT_INDEX_SORT_KEYS = (eventsTable.localIndexes ?? []).map((index) => index.sortKey);
const TRANSACT_WRITES = new Set(['TransactWriteCommand', 'TransactWriteItemsCommand']);
const READS = new Set([
  'GetCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetCommand',
  'TransactGetCommand',
  'GetItemCommand',
  'BatchGetItemCommand',
  'TransactGetItemsCommand',
]);

const SINGLE_ITEM_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/** Items a call of `command` (no Command suffix) wrote, from what it sent. */
export function itemsWritten(command: string, input: Record<string, unknown>): number {
  if (SINGLE_ITEM_WRITES.has(command)) return 1;
  if (command === 'TransactWriteItems')
    return (input.TransactItems as Record<string, unknown>[]).filter((item) => !('ConditionCheck' in item)).length;
  if (command === 'BatchWriteItem')
    return Object.values(input.RequestItems as Record<string, unknown[]>).reduce((sum, items) => sum + items.length, 0);
  return 0;
}

/** Items a call of `command` read, from what it sent and DynamoDB answered. */
export function itemsRead(command: string, input: Record<string, unknown>, output: Record<string, unknown>): number {
  if (command === 'GetItem') return output.Item === undefined ? 0 : 1;
  if (command === 'Query' || command === 'Scan') return (output.ScannedCount as number | undefined) ?? 0;
  if (command === 'BatchGetItem')
    return Object.values((output.Responses ?? {}) as Record<string, unknown[]>).reduce((sum, items) => sum + items.length, 0);
  if (command === 'TransactGetItems') return (input.TransactItems as unknown[]).length;
  return 0;
}

interface Consumed {
  TableName?: string;
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
}

/**
 * Installs the meter on the Composition's DynamoDB client, once per Composition: each call
 * made while `current()` gives a tally is counted into it; other calls pass
 * untouched.
 */
export function meterCapacity(composition: Composition, current: () => CapacityTally | undefined): void {
  const eventsTableName = composition.config.eventsTable;
  composition.use(dynamo).middlewareStack.add(
    (next, context) => async (args) => {
      const tally = current();
      if (!tally) return next(args);
      const command = (context.commandName ?? 'unknown').replace(/Command$/, '');
      tally.calls[command] = (tally.calls[command] ?? 0) + 1;
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const output = result.output as { ConsumedCapacity?: Consumed | Consumed[] };
      const isRead = READS.has(context.commandName ?? '');
      tally.itemsWritten += itemsWritten(command, input);
      tally.itemsRead += itemsRead(command, input, result.output as Record<string, unknown>);
      for (const entry of output.ConsumedCapacity === undefined ? [] : [output.ConsumedCapacity].flat()) {
        // DynamoDB reports the split where it has one (transactions); else the operation says which.
        const read = entry.ReadCapacityUnits ?? (isRead ? (entry.CapacityUnits ?? 0) : 0);
        const written = entry.WriteCapacityUnits ?? (isRead ? 0 : (entry.CapacityUnits ?? 0));
        tally.readUnits += read;
        tally.reportedWriteUnits += written;
        if (entry.TableName === eventsTableName) {
          tally.eventsReadUnits += read;
          tally.eventsReportedWriteUnits += written;
        }
      }
      delete output.ConsumedCapacity;
      return result;
    },
    { step: 'initialize', name: 'benchConsumedCapacity' },
  );
  // A committed transaction as it was sent: its items' sizes, which AWS bills by. (A cancelled one is not counted,
  // as DynamoDB Local reports nothing for it: what AWS bills for one is not measured here.)
  composition.use(dynamo).middlewareStack.add(
    (next, context) => async (args) => {
      const tally = current();
      const { body } = args.request as { body?: unknown };
      if (!tally || !TRANSACT_WRITES.has(context.commandName ?? '')) return next(args);
      if (typeof body !== 'string' && !(body instanceof Uint8Array))
        throw new Error(`A transaction's body the bench cannot read: ${typeof body}`);
      const units = transactionWriteUnits(
        typeof body === 'string' ? body : Buffer.from(body).toString('utf8'),
        eventsTableName,
        EVENT_INDEX_SORT_KEYS,
      );
      const result = await next(args);
      tally.eventsWriteUnits += units;
      return result;
    },
    { step: 'build', name: 'benchTransactionItems' },
  );
}
