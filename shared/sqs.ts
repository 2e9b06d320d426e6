import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Credentials } from './s3/signer.js';
import { signedPost } from './signed-post.js';

/** SQS takes at most ten messages per SendMessageBatch. */
const MAX_BATCH = 10;
const TIMEOUT_MS = 5_000;

/** What SQS answers a SendMessageBatch (its JSON protocol). */
interface BatchAnswer {
  Successful?: { Id: string }[];
  Failed?: { Id: string; Code?: string; Message?: string; SenderFault?: boolean }[];
}

export class QueueRefused extends Error {
  override readonly name = 'QueueRefused';
}

/** A message to send: its body, and how long SQS holds it before its first delivery (at most 900 s). */
export interface QueueMessage {
  body: string;
  delaySeconds?: number;
}

/**
 * A queue as the fan-out feeds it (the previews', the scan timers'): SQS's
 * JSON protocol over HTTP, SigV4-signed (service `sqs`) with the function's
 * own credentials, so no SQS client rides in the fan-out's bundle. The local
 * server answers the same requests (infra/local/queue.ts), checking the key's
 * role as IAM would. Any message not taken fails the call: the stream batch is
 * retried, and a message sent twice is harmless (its consumer settles once).
 */
export class SqsQueue {
  private readonly queueUrl: URL;
  private readonly signer: SignatureV4;

  constructor(queueUrl: string, region: string, credentials: Credentials) {
    this.queueUrl = new URL(queueUrl);
    this.signer = new SignatureV4({ service: 'sqs', region, credentials, sha256: Sha256 });
  }

  async send(messages: readonly QueueMessage[]): Promise<void> {
    for (let start = 0; start < messages.length; start += MAX_BATCH) await this.sendBatch(messages.slice(start, start + MAX_BATCH));
  }

  private async sendBatch(messages: readonly QueueMessage[]): Promise<void> {
    const body = JSON.stringify({
      QueueUrl: this.queueUrl.href,
      Entries: messages.map((message, index) => ({
        Id: String(index),
        MessageBody: message.body,
        ...(message.delaySeconds === undefined ? {} : { DelaySeconds: message.delaySeconds }),
      })),
    });
    const response = await signedPost(
      this.signer,
      new URL('/', this.queueUrl),
      { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessageBatch' },
      body,
      TIMEOUT_MS,
    );
    const text = await response.text();
    if (!response.ok) throw new QueueRefused(`SQS answered ${response.status}: ${text.slice(0, 300)}`);
    const failed = (JSON.parse(text) as BatchAnswer).Failed ?? [];
    if (failed.length > 0)
      throw new QueueRefused(`SQS refused ${failed.length} of ${messages.length} messages: ${JSON.stringify(failed).slice(0, 300)}`);
  }
}
