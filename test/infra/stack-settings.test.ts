import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { describe, expect, it } from 'vitest';
import { messagingApp } from '../../infra/stack/messaging-app.js';
import { readConfig } from '../../shared/config.js';
import { resourcesOf, synthesize, testContext } from './synth.js';

describe('context settings', () => {
  it('makes a throw-away stack with -c ephemeral=true: data, logs and secret go with it', () => {
    const { template, validationReport, remove } = synthesize({ ephemeral: 'true' });
    try {
      for (const type of ['AWS::DynamoDB::Table', 'AWS::S3::Bucket', 'AWS::Logs::LogGroup', 'AWS::SecretsManager::Secret']) {
        const resources = template.findResources(type);
        expect(Object.keys(resources).length, type).toBeGreaterThan(0);
        for (const resource of Object.values(resources)) expect(resource.DeletionPolicy, type).toBe('Delete');
      }
      for (const { Properties } of Object.values(resourcesOf(template, 'AWS::DynamoDB::Table'))) {
        expect(Properties.DeletionProtectionEnabled).toBe(false);
      }
      expect(Object.keys(template.findResources('Custom::S3AutoDeleteObjects'))).toHaveLength(2);
      expect(validationReport.pluginReports.flatMap((report) => report.violations)).toEqual([]);
    } finally {
      remove();
    }
  });

  it('verifies tokens from a JWKS URL instead of the stack secret when -c authJwksUrl is given, groups from -c authGroupsClaim', () => {
    const jwksUrl = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example/.well-known/jwks.json';
    const issuer = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example';
    const { template, remove } = synthesize({
      authJwksUrl: jwksUrl,
      authIssuer: issuer,
      authAudience: 'client-1',
      authGroupsClaim: 'cognito:groups',
    });
    try {
      expect(template.findResources('AWS::SecretsManager::Secret')).toEqual({});
      expect(template.toJSON().Outputs.AuthSecretArn).toBeUndefined();
      const authorizer = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).find(
        ({ Properties }) => 'AUTH_JWKS_URL' in Properties.Environment.Variables,
      );
      expect(authorizer!.Properties.Environment.Variables).toEqual({
        AUTH_JWKS_URL: jwksUrl,
        AUTH_ISSUER: issuer,
        AUTH_AUDIENCE: 'client-1',
        GROUPS_CLAIM: 'cognito:groups',
        NODE_OPTIONS: '--enable-source-maps',
      });
      expect(authorizer!.Properties.Layers).toBeUndefined();
      const actions = Object.values(resourcesOf(template, 'AWS::IAM::Policy')).flatMap(({ Properties }) =>
        Properties.PolicyDocument.Statement.flatMap((s: { Action: string | string[] }) => [s.Action].flat()),
      );
      expect(actions.filter((a) => a.startsWith('secretsmanager:'))).toEqual([]);
    } finally {
      remove();
    }
  });

  it('leaves the secrets extension layer out of a template for sam local (-c samLocal=true)', () => {
    const { template, remove } = synthesize({ samLocal: 'true' });
    try {
      const functions = Object.values(resourcesOf(template, 'AWS::Lambda::Function'));
      expect(functions.some(({ Properties }) => 'AUTH_SECRET_ARN' in Properties.Environment.Variables)).toBe(true);
      for (const { Properties } of functions) expect(Properties.Layers).toBeUndefined();
    } finally {
      remove();
    }
  });

  it('lets browsers of the given origins call the API, fetch files and upload parts (reading their ETag), and tells the functions about them', () => {
    const { template, remove } = synthesize({ corsOrigins: 'https://app.example, https://admin.example' });
    try {
      const files = Object.entries(resourcesOf(template, 'AWS::S3::Bucket')).find(([id]) => id.startsWith('DataFiles'))![1];
      expect(files.Properties.CorsConfiguration.CorsRules).toEqual([
        expect.objectContaining({
          AllowedMethods: ['GET', 'HEAD', 'PUT'],
          AllowedHeaders: ['Content-Type'],
          AllowedOrigins: ['https://app.example', 'https://admin.example'],
          ExposedHeaders: expect.arrayContaining(['Content-Disposition', 'ETag']),
        }),
      ]);
      // Gateway responses can only copy the request's Origin when there are several (shared/http/cors.ts).
      for (const { Properties } of Object.values(resourcesOf(template, 'AWS::ApiGateway::GatewayResponse'))) {
        expect(Properties.ResponseParameters['gatewayresponse.header.access-control-allow-origin']).toBe('method.request.header.Origin');
        expect(Properties.ResponseParameters['gatewayresponse.header.access-control-expose-headers']).toContain('x-request-id');
      }
      // The preflight picks the origin from the list in its mapping template.
      for (const { Properties } of Object.values(resourcesOf(template, 'AWS::ApiGateway::Method')).filter(
        ({ Properties }) => Properties.HttpMethod === 'OPTIONS',
      )) {
        const vtl = Properties.Integration.IntegrationResponses[0].ResponseTemplates['application/json'];
        expect(vtl).toContain('"$!origin" == "https://app.example" || "$!origin" == "https://admin.example"');
        expect(vtl).toContain('$context.responseOverride.header.Access-Control-Allow-Origin');
      }
      const handlers = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).filter(
        ({ Properties }) => Properties.Environment.Variables.CORS_ORIGINS,
      );
      expect(handlers.length).toBeGreaterThan(0);
      for (const { Properties } of handlers)
        expect(Properties.Environment.Variables.CORS_ORIGINS).toBe('https://app.example,https://admin.example');
    } finally {
      remove();
    }
  });

  it.each([
    ['https://app.example', "'https://app.example'"],
    ['*', "'*'"],
  ])('names the one configured origin %s in every gateway response', (origins, header) => {
    const { template, remove } = synthesize({ corsOrigins: origins });
    try {
      for (const { Properties } of Object.values(resourcesOf(template, 'AWS::ApiGateway::GatewayResponse'))) {
        expect(Properties.ResponseParameters['gatewayresponse.header.access-control-allow-origin']).toBe(header);
      }
    } finally {
      remove();
    }
  });

  it('refuses a file size limit that Lambda could not carry, and a JWKS URL that is not https', () => {
    expect(() => messagingApp({ context: testContext({ maxFileBytes: String(5 * 1024 * 1024) }) })).toThrow(/maxFileBytes/);
    expect(() => messagingApp({ context: testContext({ authJwksUrl: 'http://issuer.example/jwks.json' }) })).toThrow(/https/);
  });

  it('refuses a file_url lifetime longer than the signing role credentials are assumed to last (an hour)', () => {
    expect(() => messagingApp({ context: testContext({ fileUrlTtlSeconds: '3601' }) })).toThrow(
      /fileUrlTtlSeconds must be an integer from 1 to 3600/,
    );
  });

  it("refuses a scan timeout longer than SQS's longest delay (900 s), its timer's one wait, in the stack and in the functions' environment", () => {
    expect(() => messagingApp({ context: testContext({ scanTimeoutSeconds: '901' }) })).toThrow(
      /scanTimeoutSeconds must be an integer from 1 to 900/,
    );
    expect(() => readConfig({ SCAN_TIMEOUT_SECONDS: '901' })).toThrow('SCAN_TIMEOUT_SECONDS must be an integer from 1 to 900, got "901"');
  });

  it('fails the synth on a cdk-nag finding that nobody acknowledged', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'messaging-cdk-'));
    try {
      const { app, stack } = messagingApp({ outdir, context: testContext() });
      new Bucket(stack, 'UncheckedBucket');
      expect(() => app.synth()).toThrow(/AwsSolutions-S1/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
