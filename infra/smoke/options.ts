import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPOSITORY_ROOT } from '../declarations/repository.js';
import { stageBase } from './client.js';
import type { SmokeSettings } from './run.js';
import { readOutputs, type StackOutputs, stackSecret } from './stack-secret.js';
import { givenUser, runMarker, throwawayUsers } from './users.js';

export const USAGE = `usage: npm run smoke -- [--url <stage url>] [--outputs cdk-outputs.json] [options]

  --url <url>               the stage: the ApiUrl output (https://<id>.execute-api.<region>.amazonaws.com/prod/v1),
                            or the local server (http://127.0.0.1:3000); default: ApiUrl of --outputs
  --outputs <file>          what \`cdk deploy --outputs-file\` wrote: ApiUrl, and AuthSecretArn to mint tokens from
  --token <jwt>             the user to run as (default: throwaway users minted from the stage's HS256 key)
  --token-b <jwt>           a second user, for the checks between two users
  --secret-arn <arn>        the stack's token secret in Secrets Manager (default: AuthSecretArn of --outputs)
  --origin <origin>         a browser origin the stage must allow (deployed with -c corsOrigins=...)
  --cleanup-timeout <s>     how long the cleanup may take to empty what the run made (default 120)

Without --token, tokens are signed with, in this order: AUTH_SECRET, the stack's secret (--secret-arn or
--outputs, read with your AWS credentials), or for a loopback --url the local server's key (.data/).`;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** The command line and environment, resolved to a run: where, as whom, with which limits. */
export async function settingsFrom(args: readonly string[], env: NodeJS.ProcessEnv): Promise<SmokeSettings> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      url: { type: 'string' },
      outputs: { type: 'string' },
      token: { type: 'string' },
      'token-b': { type: 'string' },
      'secret-arn': { type: 'string' },
      origin: { type: 'string' },
      'cleanup-timeout': { type: 'string', default: '120' },
    },
  });
  const outputs: StackOutputs = values.outputs ? readOutputs(values.outputs) : {};
  const url = values.url ?? outputs.apiUrl;
  if (!url) throw new UsageError('name the stage: --url, or --outputs with an ApiUrl');
  const cleanupSeconds = Number(values['cleanup-timeout']);
  if (!Number.isFinite(cleanupSeconds) || cleanupSeconds <= 0) throw new UsageError('--cleanup-timeout is a number of seconds');
  if (values['token-b'] && !values.token) throw new UsageError('--token-b needs --token');

  const marker = runMarker();
  const base = stageBase(url);
  const users = values.token
    ? { user: givenUser(values.token), ...(values['token-b'] ? { other: givenUser(values['token-b']) } : {}) }
    : await throwawayUsers(await signingSecret(base, values['secret-arn'] ?? outputs.secretArn, env), marker);
  return {
    base,
    marker,
    ...users,
    ...(values.origin ? { origin: values.origin } : {}),
    cleanup: { withinMs: cleanupSeconds * 1000 },
  };
}

async function signingSecret(base: string, secretArn: string | undefined, env: NodeJS.ProcessEnv): Promise<string> {
  if (env.AUTH_SECRET) return env.AUTH_SECRET;
  if (secretArn) return stackSecret(secretArn);
  if (isLoopback(base)) {
    // The key `npm start` keeps under .data/, as `npm run token` reads it (loaded only here: it brings the local server's modules).
    const { readLocalSecret } = await import('../local/server.js');
    return readLocalSecret(join(REPOSITORY_ROOT, '.data'));
  }
  throw new UsageError('no token: pass --token (and --token-b), --outputs of an HS256 stack, --secret-arn, or AUTH_SECRET');
}

const isLoopback = (base: string) => ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(base).hostname);
