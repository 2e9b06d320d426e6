import { type Check, CheckSkipped, expect } from '../check.js';

/**
 * A browser page on the allowed origin reads a file through its file_url:
 * the files bucket's CORS rule (filesBucketCors, from the same corsOrigins)
 * must allow the origin and expose the headers a page reads.
 */
export const fileCors: Check = {
  name: 'CORS of file_url (bucket)',
  async run(context) {
    if (!context.origin) throw new CheckSkipped('no --origin');
    const attachment = context.made.attachments.values().next().value;
    if (!attachment) throw new CheckSkipped('no attachment (its check failed)');
    const response = await fetch(attachment.fileUrl, { headers: { origin: context.origin }, signal: AbortSignal.timeout(60_000) });
    await response.arrayBuffer();
    expect(response.status === 200, `file_url with Origin ${context.origin} answered ${response.status}`);
    const allowed = response.headers.get('access-control-allow-origin');
    expect(
      allowed === context.origin || allowed === '*',
      `the bucket does not allow ${context.origin} (Access-Control-Allow-Origin: ${allowed ?? 'none'})`,
    );
    const exposed = (response.headers.get('access-control-expose-headers') ?? '').toLowerCase();
    expect(
      exposed.includes('content-disposition'),
      `the bucket does not expose Content-Disposition to ${context.origin} (Access-Control-Expose-Headers: ${exposed || 'none'})`,
    );
    return `${context.origin} allowed`;
  },
};
