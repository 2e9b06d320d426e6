import type { RemovalPolicy } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { PREVIEW_DELIVERIES, PREVIEW_VISIBILITY_SECONDS } from '../../../shared/previews/delivery.js';
import { consumedQueue } from './dead-letters.js';

/**
 * The preview worker's queue (docs/decisions.md, "Previews"): the fan-out
 * sends each new record whose preview is pending; a request the worker fails
 * is delivered again after the visibility timeout, PREVIEW_DELIVERIES times
 * in all (the last settles the preview `failed`), then waits in the
 * dead-letter queue, whose first message fires the alarm.
 */
export function previewQueue(scope: Construct, removalPolicy: RemovalPolicy): ReturnType<typeof consumedQueue> {
  return consumedQueue(scope, 'Previews', 'PreviewRequests', {
    removalPolicy,
    alarmDescription:
      "A preview request failed every delivery and could not even be recorded as failed: an image's preview may stay pending. Redrive the dead-letter queue after fixing the cause.",
    visibilitySeconds: PREVIEW_VISIBILITY_SECONDS,
    deliveries: PREVIEW_DELIVERIES,
  });
}
