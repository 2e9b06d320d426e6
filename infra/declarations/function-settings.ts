/**
 * The stack's functions beside the route table's (shared/routes.ts): their
 * handler modules and the settings every function is deployed with. The CDK
 * construct (infra/stack/constructs/functions.ts), the local server and the bench read
 * them here, so this module loads neither aws-cdk-lib nor the handlers.
 */
import { routes } from '../../shared/routes.js';

export const AUTHORIZER_ENTRY = 'functions/authorizer.ts';

/** The function that removes what hangs off removed items, fed by the tables' streams (tables.ts `stream`). */
export const CLEANUP_ENTRY = 'functions/cleanup.ts';

/** The function that moves an upload to the other sides of its thread, fed by the attachments table's stream (new records). */
export const FAN_OUT_ENTRY = 'functions/fan-out.ts';

/** The events pipe's enrichment: a new event item's record as the bus entry's detail (shared/events/bus.ts). */
export const EVENT_DETAIL_ENTRY = 'functions/event-detail.ts';

/** The Event API's Lambda authorizer: the REST authorizer's token checks, each user to their own channel (shared/realtime/authorization.ts). */
export const REALTIME_AUTHORIZER_ENTRY = 'functions/realtime-authorizer.ts';

/** The function that pushes a hint per new event to its user's channel, fed by the events table's stream. */
export const REALTIME_PUBLISHER_ENTRY = 'functions/realtime-publisher.ts';

/** The preview worker: a pending preview settled from the file's bytes, fed by the previews queue (shared/previews/). */
export const PREVIEW_ENTRY = 'functions/preview.ts';

/** The scan recorder: GuardDuty's scan results, routed by an EventBridge rule, recorded on the attachments (shared/scanning/). */
export const SCAN_RECORDER_ENTRY = 'functions/scan-result.ts';

/** The scan timeout: a file with no scan result when its timer comes is unscannable, fed by the scan timers' queue (shared/scanning/timers.ts). */
export const SCAN_TIMEOUT_ENTRY = 'functions/scan-timeout.ts';

/** A large thread's settling sweep: the sides the switch's sweep missed, fed by the settling timers' queue (shared/conversations/settling-timers.ts). */
export const LARGE_THREAD_SETTLING_ENTRY = 'functions/large-thread-settling.ts';

/** A function the stack deploys: its name (the construct's id, so the Lambda function's and its role's) and handler module. */
export interface StackFunction {
  name: string;
  entry: string;
}

export const authorizerFunction = { name: 'Authorizer', entry: AUTHORIZER_ENTRY } as const satisfies StackFunction;
export const cleanupFunction = { name: 'Cleanup', entry: CLEANUP_ENTRY } as const satisfies StackFunction;
export const fanOutFunction = { name: 'FanOut', entry: FAN_OUT_ENTRY } as const satisfies StackFunction;
export const eventDetailFunction = { name: 'EventDetail', entry: EVENT_DETAIL_ENTRY } as const satisfies StackFunction;
export const realtimePublisherFunction = { name: 'RealtimePublisher', entry: REALTIME_PUBLISHER_ENTRY } as const satisfies StackFunction;
export const realtimeAuthorizerFunction = { name: 'RealtimeAuthorizer', entry: REALTIME_AUTHORIZER_ENTRY } as const satisfies StackFunction;
export const previewFunction = { name: 'Previews', entry: PREVIEW_ENTRY } as const satisfies StackFunction;
export const scanRecorderFunction = { name: 'ScanRecorder', entry: SCAN_RECORDER_ENTRY } as const satisfies StackFunction;
export const scanTimeoutFunction = { name: 'ScanTimeouts', entry: SCAN_TIMEOUT_ENTRY } as const satisfies StackFunction;
export const largeThreadSettlingFunction = {
  name: 'LargeThreadSettling',
  entry: LARGE_THREAD_SETTLING_ENTRY,
} as const satisfies StackFunction;

/** Lambda's own retries of an asynchronous invocation that failed (its most), before the recorder's dead-letter queue. */
export const SCAN_RECORDER_RETRIES = 2;

/**
 * Every function the stack deploys: one per route, then the others. What
 * measures or checks each function (the bench's bundles and cold starts, the
 * stack test) walks this list, so a new function cannot be left out.
 */
export const stackFunctions: readonly StackFunction[] = [
  ...routes.map(({ name, entry }) => ({ name, entry })),
  authorizerFunction,
  cleanupFunction,
  fanOutFunction,
  eventDetailFunction,
  realtimePublisherFunction,
  realtimeAuthorizerFunction,
  previewFunction,
  scanRecorderFunction,
  scanTimeoutFunction,
  largeThreadSettlingFunction,
];

/**
 * Every function's timeout: under API Gateway's 29 s integration timeout, so
 * the gateway always hears from the function. Lambda stops a function there
 * (API Gateway answers 502); the stack sets it, the local emulator enforces
 * it, and the handlers' time budget (shared/deadline.ts) ends before it, so a
 * stalled backend is a 503 rather than a timeout.
 */
export const FUNCTION_TIMEOUT_SECONDS = 20;

/**
 * The stream consumers' timeout (the cleanup, the fan-out): Lambda's most,
 * 15 minutes. Nothing waits on them, and one record can be long work (an
 * upload into a group of 10,000 sides, a side with 10,000 uploads removed):
 * the longer each invocation, the fewer retries a batch takes, and the
 * mapping's retries are few (STREAM_RETRY_ATTEMPTS). Their budget
 * (shared/deadline.ts, consumerBudgetFor) ends shortly before it, so a batch
 * still unfinished reports where it stopped rather than being cut
 * (docs/decisions.md, "Stream consumers sized for their work").
 */
export const CONSUMER_TIMEOUT_SECONDS = 900;

/**
 * Every function's memory and architecture (arm64: Graviton, a GB-second
 * 20% cheaper than x86_64's, bench/cost.ts): the stack deploys them, the bench
 * prices GB-seconds with them, the secrets extension's layer is per
 * architecture. 512 MB buys the CPU that parsing a 4 MiB multipart body and
 * the SDKs' cold start want. Here rather than in the CDK construct, so that
 * what reads them does not load aws-cdk-lib.
 */
export const FUNCTION_SETTINGS = { memoryMb: 512, architecture: 'arm64' } as const;

/**
 * Where an event source mapping starts reading a stream it has never read
 * (its shards at creation; shards that open later are read from their start,
 * as Lambda does), and the age past which Lambda hands a record to the
 * mapping's on-failure destination instead of the function (none: the
 * stream's 24 hours).
 */
export interface StreamReading {
  startingPosition: 'TRIM_HORIZON' | 'LATEST';
  maxRecordAgeSeconds?: number;
}

/** The cleanup and the fan-out: everything the stream holds, however late; a consumer never skips what happened while it was down. */
export const CONSUMER_STREAM_READING = { startingPosition: 'TRIM_HORIZON' } as const satisfies StreamReading;

/**
 * The real-time publisher: a hint only says "read the feed now", and a
 * client that reconnects reads the feed anyway (docs/api.md, "Reconnecting").
 * So its mapping starts at the newest record (a first deploy onto a table
 * with history does not push a day of old events), and a hint older than a
 * minute (Lambda's shortest maximum age) goes to the dead-letter queue rather
 * than holding every later hint of its shard behind a failing batch.
 */
export const REALTIME_PUBLISHER_STREAM_READING = { startingPosition: 'LATEST', maxRecordAgeSeconds: 60 } as const satisfies StreamReading;

/**
 * The preview worker's memory, sized from its measured peak (docs/performance.md, "Previews"): rendering
 * peaks at 141 MiB (a 99-megapixel PNG, the pixel limit; 93 MiB for a 12 MP JPEG) beside a file of at
 * most PREVIEW_MAX_BYTES (100 MiB) read whole: about 250 MiB, four times under this. Half a vCPU renders a
 * 12 MP JPEG in well under a second.
 */
export const PREVIEW_MEMORY_MB = 1024;
