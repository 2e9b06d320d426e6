import type { SignatureV4 } from '@smithy/signature-v4';

/**
 * A POST signed with SigV4 and sent with fetch: how the real-time publisher
 * and the fan-out's previews queue reach AWS without an SDK client in their bundles.
 */
export async function signedPost(
  signer: SignatureV4,
  url: URL,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<Response> {
  const signed = await signer.sign({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: url.pathname,
    query: {},
    headers: { host: url.host, ...headers },
    body,
  });
  // fetch sets Host itself, the same value as signed.
  const sent = Object.fromEntries(Object.entries(signed.headers).filter(([name]) => name.toLowerCase() !== 'host'));
  return fetch(url, { method: 'POST', headers: sent, body, signal: AbortSignal.timeout(timeoutMs) });
}
