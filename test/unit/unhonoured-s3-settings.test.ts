import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readConfig } from '../../shared/config.js';

/**
 * The settings that move the S3 client's requests elsewhere, which the S3
 * layer does not read: a process refuses to start with them rather than send
 * files where the operator said they must not go (shared/config.ts).
 */
const NO_FILE = { AWS_CONFIG_FILE: '/nonexistent/aws-config' };

function configFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 's3-settings-')), 'config');
  writeFileSync(file, text);
  return file;
}

describe('settings the S3 layer cannot honour', () => {
  it.each([
    [{ AWS_USE_FIPS_ENDPOINT: 'true' }, 'AWS_USE_FIPS_ENDPOINT'],
    [{ AWS_USE_DUALSTACK_ENDPOINT: 'TRUE' }, 'AWS_USE_DUALSTACK_ENDPOINT'],
    [{ AWS_ENDPOINT_URL_S3: 'https://s3.example.com' }, 'AWS_ENDPOINT_URL_S3 (set S3_ENDPOINT for another S3)'],
    [{ AWS_ENDPOINT_URL: 'https://aws.example.com' }, 'AWS_ENDPOINT_URL (set S3_ENDPOINT for another S3)'],
  ])('refuse to start when the environment sets %o', (env, named) => {
    expect(() => readConfig({ ...NO_FILE, ...env })).toThrow(named);
    expect(() => readConfig({ ...NO_FILE, ...env })).toThrow(/does not honour them.*Unset them to start/);
  });

  it('take false, empty, and an environment without them', () => {
    expect(
      readConfig({ ...NO_FILE, AWS_USE_FIPS_ENDPOINT: 'false', AWS_USE_DUALSTACK_ENDPOINT: 'false', AWS_ENDPOINT_URL_S3: '' }).filesBucket,
    ).toBe('attachments');
    expect(
      readConfig({ ...NO_FILE, AWS_ENDPOINT_URL_S3: 'https://x.example', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' }).filesBucket,
    ).toBe('attachments');
  });

  it("refuse them in the shared config file's profile too, as the SDK reads them there", () => {
    const file = configFile(
      [
        '[default]',
        'region = eu-west-1',
        '',
        '[profile fips]',
        'use_fips_endpoint = true',
        '',
        '[profile moved]',
        'services = moved-s3',
        '',
        '[services moved-s3]',
        's3 =',
        '  endpoint_url = https://s3.example.com',
        '',
      ].join('\n'),
    );
    expect(readConfig({ AWS_CONFIG_FILE: file }).region).toBe('us-east-1');
    expect(() => readConfig({ AWS_CONFIG_FILE: file, AWS_PROFILE: 'fips' })).toThrow('use_fips_endpoint');
    expect(() => readConfig({ AWS_CONFIG_FILE: file, AWS_PROFILE: 'moved' })).toThrow('endpoint_url of s3 in the services section');
    // The environment wins over the file, as in the SDK.
    expect(readConfig({ AWS_CONFIG_FILE: file, AWS_PROFILE: 'fips', AWS_USE_FIPS_ENDPOINT: 'false' }).region).toBe('us-east-1');
  });
});
