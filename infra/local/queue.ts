import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type InvocationTime, invocationTime } from '../../shared/deadline.js';
import { logger } from '../../shared/observability.js';
import type { PolicyEvaluator } from './iam.js';

/** A message as the queue holds it. */
export interface QueuedMessage {
  id: string;
  body: string;
  sentAt: number;
  /** Deliveries so far (SQS's ApproximateReceiveCount). */
  receives: number;
  /** When it may be delivered (again): after its visibility timeout. */
  visibleAt: number;
}

export interface LocalQueueOptions {
  name: string;
  region: string;
  account: string;
  /** The queue's URL: where SendMessageBatch is posted (the server's listener) and what its body names. */
  url: string;
  /** Who may send: a key whose role allows sqs:SendMessage on the queue's ARN, or the base key (the developer's own). */
  iam: PolicyEvaluator;
  baseKeyId: string;
  /** What the event source mapping runs: the consumer, as its own function. */
  handler: (event: SQSEvent, time?: InvocationTime) => Promise<SQSBatchResponse>;
  batchSize: number;
  /** A message's deliveries before it moves to the dead letters (the redrive policy's maxReceiveCount). */
  maxDeliveries: number;
  visibilityMs: number;
  functionTimeoutMs: number;
}

export interface LocalQueue {
  url: string;
  arn: string;
  /** One SendMessage or SendMessageBatch call for this queue, its body parsed: SQS's answer. */
  accept(call: QueueCall): Promise<QueueAnswer>;
  /** Messages waiting (delayed or not) or in flight. */
  readonly depth: number;
  /** Messages taken since the queue started (SQS's NumberOfMessagesSent). */
  readonly sent: number;
  /** What moved to the dead-letter queue after its last delivery. */
  readonly deadLetters: readonly QueuedMessage[];
  stop(): Promise<void>;
}

/** A send call as SQS's JSON protocol carries it: its target, the key it was signed with, its body. */
export interface QueueCall {
  target: string;
  keyId: string;
  body: { QueueUrl?: unknown; Entries?: unknown; MessageBody?: unknown; DelaySeconds?: unknown };
}

export interface QueueAnswer {
  status: number;
  body: object;
}

const MAX_ENTRIES = 10;
const MAX_BODY_BYTES = 262_144;
/** SQS's longest delivery delay (DelaySeconds): 15 minutes. */
export const MAX_DELAY_SECONDS = 900;
const IDLE_POLL_MS = 50;

/**
 * A queue's stand-in (SQS with a redrive policy, and Lambda's event source
 * mapping polling it: the previews', the scan timers'), in the local server:
 * the fan-out sends to it over HTTP as it would to SQS (localSqs), checked
 * against its role by the local IAM; a message sent with DelaySeconds waits
 * that long, at most SQS's 900 s (a larger delay is refused, as SQS refuses
 * it); a poller delivers batches to the consumer, hides each delivered message
 * for the visibility timeout, deletes what the worker finished, delivers
 * again what it reported failed (or all of a batch that threw or ran past its
 * timeout) once visible, and moves a message past its last delivery to the
 * dead letters. Not checked: the request's signature (the sender signs with
 * the SDK's signer, as its S3 and Event API calls, whose signatures the local
 * stand-ins do check).
 */
export function startLocalQueue(options: LocalQueueOptions): LocalQueue {
  const messages = new Map<string, QueuedMessage>();
  const deadLetters: QueuedMessage[] = [];
  const arn = `arn:aws:sqs:${options.region}:${options.account}:${options.name}`;
  let running = true;
  let sent = 0;

  const accept = async ({ target, keyId, body }: QueueCall): Promise<QueueAnswer> => {
    if (keyId !== options.baseKeyId) {
      const role = options.iam.roleOf(keyId);
      if (!role) return refusal(403, 'InvalidClientTokenId', 'The security token included in the request is invalid.');
      const denial = await options.iam.denial(role, [{ action: 'sqs:SendMessage', resource: arn }]);
      if (denial) return refusal(400, 'AccessDenied', denial.message);
    }
    const entries =
      target === 'SendMessage'
        ? [{ Id: '0', MessageBody: body.MessageBody, DelaySeconds: body.DelaySeconds }]
        : target === 'SendMessageBatch'
          ? body.Entries
          : undefined;
    if (!Array.isArray(entries)) return refusal(400, 'UnsupportedOperation', `${target} is not supported by the local queue`);
    if (entries.length === 0)
      return refusal(400, 'EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.');
    if (entries.length > MAX_ENTRIES)
      return refusal(400, 'TooManyEntriesInBatchRequest', `Maximum number of entries per request are ${MAX_ENTRIES}.`);
    const typed = entries as { Id?: unknown; MessageBody?: unknown; DelaySeconds?: unknown }[];
    // SQS checks the whole request before it takes any message.
    for (const entry of typed) {
      if (typeof entry.MessageBody !== 'string' || Buffer.byteLength(entry.MessageBody) > MAX_BODY_BYTES)
        return refusal(400, 'InvalidParameterValue', 'A message body must be a string of at most 256 KiB.');
      if (!validDelay(entry.DelaySeconds))
        return refusal(
          400,
          'InvalidParameterValue',
          `Value ${String(entry.DelaySeconds)} for parameter DelaySeconds is invalid. Reason: must be between 0 and ${MAX_DELAY_SECONDS}, if provided.`,
        );
    }
    const successful = typed.map((entry) => {
      const body = entry.MessageBody as string;
      const id = randomUUID();
      const sentAt = Date.now();
      // A delayed message stays invisible for its delay, as SQS keeps it (the queue's own delay is 0).
      messages.set(id, { id, body, sentAt, receives: 0, visibleAt: sentAt + ((entry.DelaySeconds as number | undefined) ?? 0) * 1000 });
      sent += 1;
      return { Id: entry.Id, MessageId: id, MD5OfMessageBody: createHash('md5').update(body).digest('hex') };
    });
    return { status: 200, body: target === 'SendMessage' ? (successful[0] ?? {}) : { Successful: successful, Failed: [] } };
  };

  const record = (message: QueuedMessage): SQSRecord => ({
    messageId: message.id,
    receiptHandle: `${message.id}:${message.receives}`,
    body: message.body,
    attributes: {
      ApproximateReceiveCount: String(message.receives),
      SentTimestamp: String(message.sentAt),
      SenderId: options.account,
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: createHash('md5').update(message.body).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: options.region,
  });

  /** The next batch of visible messages, each hidden for the visibility timeout; past its last delivery, to the dead letters. */
  const receive = (): QueuedMessage[] => {
    const now = Date.now();
    const batch: QueuedMessage[] = [];
    for (const message of messages.values()) {
      if (batch.length >= options.batchSize) break;
      if (message.visibleAt > now) continue;
      if (message.receives >= options.maxDeliveries) {
        messages.delete(message.id);
        deadLetters.push(message);
        logger.error('queue message moved to the dead letters after its last delivery', { queue: options.name, message_id: message.id });
        continue;
      }
      message.receives += 1;
      message.visibleAt = now + options.visibilityMs;
      batch.push(message);
    }
    return batch;
  };

  const deliver = async (batch: QueuedMessage[]) => {
    let failed: Set<string>;
    try {
      const response = await withTimeout(
        options.handler({ Records: batch.map(record) }, invocationTime(options.functionTimeoutMs)),
        options.functionTimeoutMs,
      );
      failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
    } catch (error) {
      logger.error('queue batch failed; its messages are delivered again once visible', { queue: options.name, error });
      failed = new Set(batch.map((message) => message.id));
    }
    for (const message of batch) if (!failed.has(message.id)) messages.delete(message.id);
  };

  const polling = (async () => {
    while (running) {
      const batch = receive();
      if (batch.length === 0) await sleep(IDLE_POLL_MS);
      else await deliver(batch);
    }
  })();

  return {
    url: options.url,
    arn,
    accept,
    get depth() {
      return messages.size;
    },
    get sent() {
      return sent;
    },
    get deadLetters() {
      return deadLetters;
    },
    async stop() {
      running = false;
      await polling;
    },
  };
}

/** DelaySeconds: absent, or a whole number of seconds SQS takes (0 to 900). */
const validDelay = (delay: unknown) =>
  delay === undefined || (typeof delay === 'number' && Number.isInteger(delay) && delay >= 0 && delay <= MAX_DELAY_SECONDS);

const refusal = (status: number, type: string, message: string): QueueAnswer => ({
  status,
  body: { __type: `com.amazonaws.sqs#${type}`, message },
});

/**
 * SQS's endpoint on the server's listener, in front of every local queue:
 * it reads a send call (SQS's JSON protocol), and hands it to the queue its
 * QueueUrl names, or answers as SQS does when there is none.
 */
export function localSqs(queues: readonly LocalQueue[]): {
  handleRequest(request: IncomingMessage, response: ServerResponse): boolean;
} {
  const serve = async (request: IncomingMessage, response: ServerResponse) => {
    const answer = ({ status, body }: QueueAnswer) => {
      const text = JSON.stringify(body);
      response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(text) });
      response.end(text);
    };
    const target = String(request.headers['x-amz-target'] ?? '').slice('AmazonSQS.'.length);
    const chunks: Buffer[] = [];
    for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk);
    const keyId = /Credential=([^/,\s]+)\//.exec(request.headers.authorization ?? '')?.[1];
    if (!keyId) return answer(refusal(400, 'MissingAuthenticationToken', 'Request is missing Authentication Token'));
    let body: QueueCall['body'];
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as QueueCall['body'];
    } catch {
      return answer(refusal(400, 'InvalidParameterValue', 'The body must be JSON'));
    }
    const queue = queues.find((candidate) => candidate.url === body.QueueUrl);
    if (!queue) return answer(refusal(400, 'QueueDoesNotExist', 'The specified queue does not exist.'));
    answer(await queue.accept({ target, keyId, body }));
  };
  return {
    handleRequest(request, response) {
      const target = request.headers['x-amz-target'];
      if (request.method !== 'POST' || typeof target !== 'string' || !target.startsWith('AmazonSQS.')) return false;
      serve(request, response).catch((error: unknown) => {
        logger.error('local queue failed', { error });
        if (!response.headersSent) response.writeHead(500);
        response.end();
      });
      return true;
    },
  };
}

/** The function's timeout, as Lambda ends an invocation: the batch fails whole. */
function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`the function timed out after ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
