import type { DynamoDBRecord } from 'aws-lambda';
import { type BusDetail, busDetail } from '../shared/events/bus.js';

/**
 * The enrichment of the events pipe (infra/stack/constructs/operator-events.ts):
 * Pipes hands it a batch of the events table's new event items and puts what
 * it returns on the bus, one entry per element, in order. It only turns each
 * stored event (JSON text, which no input template can turn back into an
 * object) into the entry's detail; the pipe keeps the delivery: retries,
 * bisection, dead letters. A malformed item throws, so its batch is retried,
 * then dead-lettered and alarmed, never dropped unseen.
 */
export const handler = async (records: DynamoDBRecord[]): Promise<BusDetail[]> => records.map(busDetail);
