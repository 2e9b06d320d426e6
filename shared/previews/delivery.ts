/**
 * How the previews queue delivers, declared once for the stack's queue and
 * mapping (infra/stack/constructs/previews.ts) and the local queue (infra/local/queue.ts).
 */

/** Deliveries of a request before its dead-letter queue: the worker's last one settles the preview `failed`. */
export const PREVIEW_DELIVERIES = 5;

/**
 * How long a delivered request stays invisible: the worker's timeout and more
 * (SQS advises six times it for a Lambda mapping), so a request is never
 * delivered again while a worker still holds it. The backoff between deliveries.
 */
export const PREVIEW_VISIBILITY_SECONDS = 180;

/** The worker's timeout: a 100-megapixel image decodes in seconds; a stalled backend ends well before. */
export const PREVIEW_TIMEOUT_SECONDS = 30;

/** Requests per invocation, one after the other (each holds an image in memory). */
export const PREVIEW_BATCH_SIZE = 1;
