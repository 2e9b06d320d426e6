import { readFileSync } from 'node:fs';

/** What `cdk deploy --outputs-file` wrote for the stack: `{ "<stack>": { "ApiUrl": …, "AuthSecretArn": … } }`. */
export interface StackOutputs {
  apiUrl?: string;
  secretArn?: string;
}

export function readOutputs(file: string): StackOutputs {
  const stacks = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, string>>;
  const withApi = Object.entries(stacks).filter(([, outputs]) => typeof outputs.ApiUrl === 'string');
  const [stack, ...others] = withApi;
  if (!stack || others.length > 0) {
    throw new Error(
      `${file} must hold exactly one stack with an ApiUrl output; it holds ${withApi.length} (${Object.keys(stacks).join(', ') || 'none'})`,
    );
  }
  const [, outputs] = stack;
  return { apiUrl: outputs.ApiUrl, secretArn: outputs.AuthSecretArn };
}

/**
 * The stack's HS256 key, read with the caller's own AWS credentials (profile,
 * SSO, environment: the SDK's default chain, as `cdk deploy` uses). The
 * Secrets Manager client is a dev dependency loaded only here, only when a
 * token is to be minted from the stack's secret: no function imports this
 * file, so no Lambda bundle holds it (the authorizer reads the secret
 * through the Parameters and Secrets extension instead).
 */
export async function stackSecret(secretArn: string): Promise<string> {
  const region = secretArn.split(':')[3];
  if (!secretArn.startsWith('arn:') || !region) throw new Error(`Not a Secrets Manager ARN: ${secretArn}`);
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const client = new SecretsManagerClient({ region });
  try {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
    if (!SecretString) throw new Error(`The secret ${secretArn} has no string value`);
    return SecretString;
  } catch (error) {
    const name = error instanceof Error ? error.name : '';
    if (name === 'AccessDeniedException' || name === 'CredentialsProviderError' || name === 'ExpiredTokenException') {
      throw new Error(
        `Cannot read the stack's token secret (${name}): use credentials that may call secretsmanager:GetSecretValue on it, or pass --token and --token-b`,
      );
    }
    throw error;
  } finally {
    client.destroy();
  }
}
