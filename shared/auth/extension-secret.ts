/**
 * A Secrets Manager secret read through the AWS Parameters and Secrets Lambda
 * Extension (a layer on the authorizer): a GET on its local HTTP API, which
 * calls GetSecretValue with the function's role. No AWS SDK in the bundle: the
 * Secrets Manager client alone made the authorizer ten times bigger (issue 5).
 */
/** Per attempt: a hung extension fails the cold start's read, which the next request retries. */
const ATTEMPT_TIMEOUT_MS = 3_000;
// Lambda finishes extension init before the first invocation, so "not ready" is not expected when
// the read happens in the handler; a brief bounded wait covers a slow extension anyway.
const NOT_READY_ATTEMPTS = 3;
const NOT_READY_PAUSE_MS = 100;

export async function extensionSecret(secretId: string, port: string): Promise<string> {
  const url = `http://localhost:${port}/secretsmanager/get?secretId=${encodeURIComponent(secretId)}`;
  // The extension only answers callers that present the function's own session token: a credential the
  // runtime sets, read when used (as the SDK reads its credentials), not a setting of ours.
  const sessionToken = process.env.AWS_SESSION_TOKEN;
  const headers: Record<string, string> = sessionToken ? { 'X-Aws-Parameters-Secrets-Token': sessionToken } : {};
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS) });
    const body = await response.text();
    if (response.ok) return secretStringOf(body);
    if (response.status === 400 && /not ready/i.test(body) && attempt < NOT_READY_ATTEMPTS) {
      await new Promise((resolve) => setTimeout(resolve, NOT_READY_PAUSE_MS));
      continue;
    }
    throw new Error(`The Parameters and Secrets extension answered ${response.status} for the authorizer secret: ${body.slice(0, 200)}`);
  }
}

function secretStringOf(body: string): string {
  const { SecretString } = JSON.parse(body) as { SecretString?: unknown };
  if (typeof SecretString !== 'string' || !SecretString) throw new Error('The authorizer secret has no string value');
  return SecretString;
}
