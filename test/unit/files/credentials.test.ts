import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Config } from '../../../shared/config.js';
import { filesCredentials } from '../../../shared/files/credentials.js';

const config = (credentials?: Config['credentials']) => ({ credentials }) as Config;

describe('filesCredentials', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('keeps configured credentials as they are (the local server, the tests)', () => {
    const configured = { accessKeyId: 'local', secretAccessKey: 'local' };
    expect(filesCredentials(config(configured))).toBe(configured);
  });

  it("otherwise resolves the SDK's default chain, whose first link is the environment Lambda fills with the role's credentials", async () => {
    vi.stubEnv('AWS_PROFILE', '');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDROLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'role-secret');
    vi.stubEnv('AWS_SESSION_TOKEN', 'role-session');
    const provider = filesCredentials(config());
    expect(typeof provider).toBe('function');
    const resolved = await (provider as () => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>)();
    expect(resolved).toMatchObject({ accessKeyId: 'AKIDROLE', secretAccessKey: 'role-secret', sessionToken: 'role-session' });
  });
});
