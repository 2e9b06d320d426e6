import { Match } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  largeThreadSettlingFunction,
  PREVIEW_MEMORY_MB,
  previewFunction,
  scanRecorderFunction,
  scanTimeoutFunction,
  stackFunctions,
} from '../../infra/declarations/function-settings.js';
import { type GatewayResponseType, gatewayResponses } from '../../infra/declarations/gateway-responses.js';
import { BEARER_HEADER_PATTERN, BINARY_MEDIA_TYPES } from '../../infra/declarations/gateway-settings.js';
import { DEFAULT_FILE_URL_TTL_SECONDS, DEFAULT_MAX_FILE_BYTES } from '../../shared/config.js';
import { SETTLING_BATCH_SIZE, SETTLING_DELIVERIES, SETTLING_TIMEOUT_SECONDS } from '../../shared/conversations/settling-timers.js';
import {
  attachmentsTable,
  conversationsTable,
  eventsTable,
  idempotencyTable,
  type TableDefinition,
  uploadSessionsTable,
} from '../../shared/dynamo/tables.js';
import { FILES_PREFIX, PREVIEWS_PREFIX } from '../../shared/files/keys.js';
import { routes } from '../../shared/routes.js';
import type { Json } from '../support/api.js';
import { operatorEventsTests } from './operator-events.js';
import { previewTemplateTests } from './previews.js';
import { realtimeTests } from './realtime.js';
import { scanningTemplateTests } from './scanning.js';
import { resourcesOf, type Synthesized, synthesize } from './synth.js';
import { expectTimerQueue } from './timer-queues.js';

let synthesized: Synthesized;
beforeAll(() => {
  synthesized = synthesize();
});
afterAll(() => synthesized?.remove());

const template = () => synthesized.template;
const ref = (value: unknown) => JSON.stringify(value);

describe('functions', () => {
  it("has one function per route plus the authorizer, the cleanup, the fan-out, the events pipe's enrichment, the real-time authorizer and publisher, the preview worker, the scan recorder, the scan timeout and the large threads' settling, all Node.js 24 on arm64 with tracing and their own log group", () => {
    const functions = Object.values(resourcesOf(template(), 'AWS::Lambda::Function'));
    expect(functions).toHaveLength(routes.length + 10);
    // The list the bench measures (infra/declarations/function-settings.ts) is the stack's: one function each, by its name.
    const logicalIds = Object.keys(resourcesOf(template(), 'AWS::Lambda::Function'));
    const named = logicalIds.map((id) => stackFunctions.find(({ name }) => new RegExp(`^Functions${name}[0-9A-F]{8}$`).test(id))?.name);
    expect(named.sort()).toEqual(stackFunctions.map(({ name }) => name).sort());
    for (const [id, { Properties }] of Object.entries(resourcesOf(template(), 'AWS::Lambda::Function'))) {
      expect(Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        // The preview worker's is sized for the largest image it takes (previews.ts below).
        MemorySize: id.startsWith(`Functions${previewFunction.name}`) ? PREVIEW_MEMORY_MB : 512,
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: expect.any(String) } },
      });
    }
    const logGroups = Object.values(resourcesOf(template(), 'AWS::Logs::LogGroup'));
    expect(logGroups.every(({ Properties }) => Properties.RetentionInDays > 0)).toBe(true);
  });

  it("stops the API's functions at 20 s, under API Gateway's 29 s, and lets the stream consumers and the scan recorder, which nobody waits on, run Lambda's 15 minutes", () => {
    const functions = resourcesOf(template(), 'AWS::Lambda::Function');
    const timeouts = Object.entries(functions).map(([id, { Properties }]) => [
      id.replace(/^Functions/, '').replace(/[0-9A-F]{8}$/, ''),
      Properties.Timeout,
    ]);
    const unwaited = ['Cleanup', 'FanOut', scanRecorderFunction.name];
    const consumers = timeouts.filter(([name]) => unwaited.includes(String(name)));
    expect(consumers.sort()).toEqual([
      ['Cleanup', 900],
      ['FanOut', 900],
      [scanRecorderFunction.name, 900],
    ]);
    // The queue-fed ones (the preview worker, the scan timeout, the settling) have their own, their queue's visibility timeout sized on it.
    const queueFed: string[] = [previewFunction.name, scanTimeoutFunction.name, largeThreadSettlingFunction.name];
    for (const [name, timeout] of timeouts.filter(([name]) => !unwaited.includes(String(name)) && !queueFed.includes(String(name))))
      expect(timeout, String(name)).toBe(20);
  });

  it('gives the route handlers and the stream consumers their tables, bucket and limits, and endpoints sam local can override', () => {
    const handlers = Object.values(resourcesOf(template(), 'AWS::Lambda::Function')).filter(
      ({ Properties }) => Properties.Environment.Variables.CONVERSATIONS_TABLE,
    );
    // The routes', the cleanup's, the fan-out's, the preview worker's, the scan recorder's, the scan timeout's and the settling's.
    expect(handlers).toHaveLength(routes.length + 6);
    for (const { Properties } of handlers) {
      expect(Properties.Environment.Variables).toMatchObject({
        CONVERSATIONS_TABLE: { Ref: expect.stringMatching(/^DataConversations/) },
        ATTACHMENTS_TABLE: { Ref: expect.stringMatching(/^DataAttachments/) },
        IDEMPOTENCY_TABLE: { Ref: expect.stringMatching(/^DataIdempotency/) },
        FILES_BUCKET: { Ref: expect.stringMatching(/^DataFiles/) },
        MAX_FILE_BYTES: String(DEFAULT_MAX_FILE_BYTES),
        FILE_URL_TTL_SECONDS: String(DEFAULT_FILE_URL_TTL_SECONDS),
        CORS_ORIGINS: '',
        DYNAMODB_ENDPOINT: '',
        S3_ENDPOINT: '',
      });
    }
  });

  it('points the authorizer at the stack secret it may read, and nothing else', () => {
    const [authorizer] = Object.values(resourcesOf(template(), 'AWS::Lambda::Function')).filter(
      ({ Properties }) => 'AUTH_SECRET_ARN' in Properties.Environment.Variables,
    );
    const secretId = Object.keys(resourcesOf(template(), 'AWS::SecretsManager::Secret'))[0];
    expect(authorizer!.Properties.Environment.Variables).toMatchObject({ AUTH_SECRET_ARN: { Ref: secretId }, AUTH_SECRET: '' });
    const grants = statementsOf(authorizer!.Properties.Role['Fn::GetAtt'][0]).filter((s) => !isLoggingOrTracing(s));
    expect(grants).toEqual([
      { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'], Resource: { Ref: secretId } },
    ]);
  });

  it('gives the two authorizers (REST and real-time) alone the arm64 Parameters and Secrets extension layer for the region it is deployed to', () => {
    const functions = Object.entries(resourcesOf(template(), 'AWS::Lambda::Function'));
    const withLayers = functions.filter(([, { Properties }]) => Properties.Layers);
    expect(withLayers.map(([id]) => id.replace(/[0-9A-F]{8}$/, '')).sort()).toEqual(['FunctionsAuthorizer', 'FunctionsRealtimeAuthorizer']);
    for (const [, authorizer] of withLayers) {
      expect(authorizer!.Properties.Environment.Variables).toHaveProperty('AUTH_SECRET_ARN');
      expect(authorizer!.Properties.Layers).toEqual([
        { 'Fn::FindInMap': [expect.any(String), { Ref: 'AWS::Region' }, expect.stringMatching(/arm64$/)] },
      ]);
      const [map, , key] = authorizer!.Properties.Layers[0]['Fn::FindInMap'];
      const layerArns = Object.values(template().toJSON().Mappings[map] as Record<string, Record<string, string>>).map((row) => row[key]);
      expect(layerArns.length).toBeGreaterThan(0);
      for (const arn of layerArns)
        expect(arn).toMatch(/^arn:aws:lambda:[a-z0-9-]+:\d{12}:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:\d+$/);
      expect(authorizer!.Properties.Environment.Variables).toMatchObject({
        PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: '2773',
        PARAMETERS_SECRETS_EXTENSION_CACHE_ENABLED: 'true',
      });
    }
  });
});

/** s3:ListBucket on the bucket itself (not its objects), for keys under the files prefix only. */
const listFilesStatement = {
  Effect: 'Allow',
  Action: ['s3:ListBucket'],
  Resource: { 'Fn::GetAtt': [expect.stringMatching(/^DataFiles/), 'Arn'] },
  Condition: { StringLike: { 's3:prefix': `${FILES_PREFIX}*` } },
};

/** A declared item call (shared/routes.ts, ItemCall) as the IAM action that authorises it. */
const ITEM_ACTIONS = {
  get: 'dynamodb:GetItem',
  put: 'dynamodb:PutItem',
  update: 'dynamodb:UpdateItem',
  delete: 'dynamodb:DeleteItem',
  check: 'dynamodb:ConditionCheckItem',
  'batch-get': 'dynamodb:BatchGetItem',
} as const;

describe('least privilege', () => {
  it('grants no wildcard action to any role, and a * resource only for X-Ray, dynamodb:ListStreams and guardduty:SendObjectMalwareScan (which have no resource-level permissions)', () => {
    for (const policy of Object.values(resourcesOf(template(), 'AWS::IAM::Policy'))) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        for (const action of [statement.Action].flat()) expect(action).not.toMatch(/\*/);
        if ([statement.Resource].flat().includes('*')) {
          expect([
            ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
            'dynamodb:ListStreams',
            'guardduty:SendObjectMalwareScan',
          ]).toContainEqual(statement.Action);
        }
      }
    }
  });

  it('attaches no AWS managed policy to a function role', () => {
    const functionRoles = Object.values(resourcesOf(template(), 'AWS::Lambda::Function')).map(
      ({ Properties }) => Properties.Role['Fn::GetAtt'][0],
    );
    const roles = resourcesOf(template(), 'AWS::IAM::Role');
    for (const id of functionRoles) expect(roles[id]!.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it.each(routes.map((route) => [route.name, route]))('%s gets exactly what its access declares', (name, route) => {
    const statements = statementsOf(roleOf(name)).filter((s) => !isLoggingOrTracing(s));
    const dynamodb = statements.filter((s) => s.Action.every((a: string) => a.startsWith('dynamodb:')));
    const s3 = statements.filter((s) => s.Action.every((a: string) => a.startsWith('s3:')));
    expect(dynamodb.length + s3.length).toBe(statements.length);
    // Query on exactly the tables and indexes the route declares; item calls on tables only.
    const queries = dynamodb.filter((s) => s.Action.includes('dynamodb:Query'));
    const declared = route.access.queries ?? [];
    expect(queries.map((s) => s.Action)).toEqual(declared.length ? [['dynamodb:Query']] : []);
    if (declared.length) {
      expect([queries[0].Resource].flat()).toHaveLength(declared.length);
      expect(indexNamesIn(queries[0].Resource)).toEqual(declared.flatMap((target) => target.split('/').slice(1)));
    }
    const items = dynamodb.filter((s) => !s.Action.includes('dynamodb:Query'));

    // Idempotency-Key records: claimed and completed by conditional updates, released by a delete, never put whole.
    const idempotency = route.idempotent ? (['get', 'update', 'delete'] as const) : undefined;
    const tables = [
      [route.access.conversations, 'DataConversations'],
      [route.access.attachments, 'DataAttachments'],
      [idempotency, 'DataIdempotency'],
      [route.access.uploadSessions, 'DataUploadSessions'],
      [route.access.events, 'DataEvents'],
    ] as const;
    for (const [calls, logicalPrefix] of tables) {
      const grant = items.find((s) => ref(s.Resource).includes(logicalPrefix));
      if (!calls?.length) {
        expect(grant, `${logicalPrefix} must not be granted`).toBeUndefined();
        continue;
      }
      // Exactly the item calls the route declares: no other write, no Scan, no batch it does not declare, no index.
      expect([...grant.Action].sort()).toEqual(calls.map((call) => ITEM_ACTIONS[call]).sort());
      expect(indexNamesIn(grant.Resource)).toEqual([]);
    }
    expect(items).toHaveLength(tables.filter(([calls]) => calls?.length).length);

    const files = (route.access.files ?? []).filter((f) => f !== 'list');
    const objects = s3.filter((s) => !s.Action.includes('s3:ListBucket'));
    const listing = s3.filter((s) => s.Action.includes('s3:ListBucket'));
    expect(listing).toEqual(route.access.files?.includes('list') ? [listFilesStatement] : []);
    if (files.length === 0) return expect(objects).toEqual([]);
    // A route that links to files links to their thumbnails (shared/previews/): s3:GetObject on the previews prefix, apart.
    const thumbnails = objects.filter((s) => JSON.stringify(s.Resource).includes(`/${PREVIEWS_PREFIX}*`));
    expect(thumbnails.map((s) => s.Action)).toEqual(files.includes('get') ? [['s3:GetObject']] : []);
    objects.splice(0, objects.length, ...objects.filter((s) => !thumbnails.includes(s)));
    expect(objects).toHaveLength(1);
    expect([...objects[0].Action].sort()).toEqual(
      files
        .map(
          (f) =>
            ({
              get: 's3:GetObject',
              put: 's3:PutObject',
              delete: 's3:DeleteObject',
              'list-parts': 's3:ListMultipartUploadParts',
              abort: 's3:AbortMultipartUpload',
            })[f],
        )
        .sort(),
    );
    expect(objects[0].Resource).toEqual({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [expect.stringMatching(/^DataFiles/), 'Arn'] }, `/${FILES_PREFIX}*`]],
    });
  });

  it('lets the completion list the files bucket under the files prefix only, so that S3 answers a vanished file 404, not 403', () => {
    expect(routes.filter((route) => route.access.files?.includes('list')).map((route) => route.name)).toEqual(['CompleteUploadSession']);
    expect(statementsOf(roleOf('CompleteUploadSession')).filter((s) => s.Action.includes('s3:ListBucket'))).toEqual([listFilesStatement]);
  });
});

describe('data', () => {
  const tableWith = (definition: TableDefinition) =>
    Object.values(resourcesOf(template(), 'AWS::DynamoDB::Table')).find(
      ({ Properties }) =>
        ref(Properties.GlobalSecondaryIndexes?.map((i: Json) => i.IndexName) ?? []) === ref(definition.indexes.map((i) => i.name)) &&
        Boolean(Properties.TimeToLiveSpecification) === Boolean(definition.timeToLiveAttribute) &&
        // Without it the idempotency, upload sessions and events tables (no index, a TTL) would all match the first.
        Properties.StreamSpecification?.StreamViewType === definition.stream,
    );

  it.each([
    ['conversations', conversationsTable],
    ['attachments', attachmentsTable],
    ['idempotency', idempotencyTable],
    ['upload sessions', uploadSessionsTable],
    ['events', eventsTable],
  ] as const)('declares the %s table as the code queries it, on demand, recoverable, encrypted and retained', (_, definition) => {
    const byName = (x: { AttributeName: string }, y: { AttributeName: string }) => x.AttributeName.localeCompare(y.AttributeName);
    const table = tableWith(definition);
    expect(table).toBeDefined();
    const keys = (pk: string, sk: string) => [
      { AttributeName: pk, KeyType: 'HASH' },
      { AttributeName: sk, KeyType: 'RANGE' },
    ];
    expect(table!.Properties).toMatchObject({
      KeySchema: keys(definition.partitionKey, definition.sortKey),
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(table!.Properties.GlobalSecondaryIndexes ?? []).toEqual(
      definition.indexes.map((index) => ({
        IndexName: index.name,
        KeySchema: keys(index.partitionKey, index.sortKey),
        Projection: { ProjectionType: 'ALL' },
      })),
    );
    const localIndexes = definition.localIndexes ?? [];
    expect(table!.Properties.LocalSecondaryIndexes ?? []).toEqual(
      localIndexes.map((index) => ({
        IndexName: index.name,
        KeySchema: keys(definition.partitionKey, index.sortKey),
        Projection: { ProjectionType: 'ALL' },
      })),
    );
    const attributes = new Set([
      definition.partitionKey,
      definition.sortKey,
      ...definition.indexes.flatMap((i) => [i.partitionKey, i.sortKey]),
      ...localIndexes.map((i) => i.sortKey),
    ]);
    expect([...table!.Properties.AttributeDefinitions].sort(byName)).toEqual(
      [...attributes].map((AttributeName) => ({ AttributeName, AttributeType: 'S' })).sort(byName),
    );
    if (definition.timeToLiveAttribute) {
      expect(table!.Properties.TimeToLiveSpecification).toEqual({ AttributeName: definition.timeToLiveAttribute, Enabled: true });
    }
    template().hasResource('AWS::DynamoDB::Table', {
      Properties: Match.objectLike({ KeySchema: table!.Properties.KeySchema }),
      DeletionPolicy: 'Retain',
    });
  });

  it('keeps the files bucket private, TLS-only, encrypted, logged, tidy and retained', () => {
    const [filesId, files] = Object.entries(resourcesOf(template(), 'AWS::S3::Bucket')).find(([id]) => id.startsWith('DataFiles'))!;
    expect(files.Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      LoggingConfiguration: { DestinationBucketName: { Ref: expect.stringMatching(/^DataAccessLogs/) } },
    });
    // No origin is allowed unless configured (settings.test.ts).
    expect(files.Properties.CorsConfiguration).toBeUndefined();
    expect(files.Properties.LifecycleConfiguration.Rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }),
        expect.objectContaining({ NoncurrentVersionExpiration: { NoncurrentDays: 7 } }),
      ]),
    );
    template().hasResource('AWS::S3::Bucket', {
      Properties: Match.objectLike({ LoggingConfiguration: Match.anyValue() }),
      DeletionPolicy: 'Retain',
    });
    const policies = Object.values(resourcesOf(template(), 'AWS::S3::BucketPolicy')).filter(
      ({ Properties }) => ref(Properties.Bucket) === ref({ Ref: filesId }),
    );
    expect(policies[0]!.Properties.PolicyDocument.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        expect.objectContaining({ Effect: 'Deny', Action: 's3:*', Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } } }),
      ]),
    );
  });
});

describe('the REST API', () => {
  it('has a method per route, each behind the TOKEN authorizer', () => {
    const [[authorizerId, authorizer]] = Object.entries(resourcesOf(template(), 'AWS::ApiGateway::Authorizer')) as [[string, Json]];
    expect(authorizer.Properties).toMatchObject({
      Type: 'TOKEN',
      IdentitySource: 'method.request.header.Authorization',
      IdentityValidationExpression: BEARER_HEADER_PATTERN,
      AuthorizerResultTtlInSeconds: 300,
    });
    const methods = Object.values(resourcesOf(template(), 'AWS::ApiGateway::Method')).filter(
      ({ Properties }) => Properties.HttpMethod !== 'OPTIONS',
    );
    expect(methods.map(({ Properties }) => Properties.HttpMethod).sort()).toEqual(routes.map((r) => r.method).sort());
    for (const { Properties } of methods) {
      expect(Properties).toMatchObject({
        AuthorizationType: 'CUSTOM',
        AuthorizerId: { Ref: authorizerId },
        Integration: { Type: 'AWS_PROXY' },
      });
    }
    const paths = Object.values(resourcesOf(template(), 'AWS::ApiGateway::Resource')).map(({ Properties }) => Properties.PathPart);
    for (const route of routes) for (const part of route.path.split('/').filter(Boolean)) expect(paths).toContain(part);
  });

  it('answers a CORS preflight on every resource without the authorizer, with the resource methods and the client headers', () => {
    const preflights = Object.values(resourcesOf(template(), 'AWS::ApiGateway::Method')).filter(
      ({ Properties }) => Properties.HttpMethod === 'OPTIONS',
    );
    const paths = new Set(routes.map((route) => route.path));
    expect(preflights).toHaveLength(paths.size);
    const allowedMethods = preflights.map(({ Properties }) => {
      expect(Properties).toMatchObject({ AuthorizationType: 'NONE', Integration: { Type: 'MOCK' } });
      const parameters = Properties.Integration.IntegrationResponses[0].ResponseParameters;
      expect(Properties.Integration.IntegrationResponses[0].StatusCode).toBe('204');
      expect(parameters).toMatchObject({
        'method.response.header.Vary': "'Origin'",
        'method.response.header.Access-Control-Allow-Headers': "'Authorization, Content-Type, Idempotency-Key'",
      });
      // No origin configured: none is allowed.
      expect(parameters['method.response.header.Access-Control-Allow-Origin']).toBeUndefined();
      return parameters['method.response.header.Access-Control-Allow-Methods'];
    });
    const expected = [...paths].map((path) => `'${[...routes.filter((r) => r.path === path).map((r) => r.method), 'OPTIONS'].join(', ')}'`);
    expect(allowedMethods.sort()).toEqual(expected.sort());
  });

  it('passes multipart bodies through as binary', () => {
    template().hasResourceProperties('AWS::ApiGateway::RestApi', { BinaryMediaTypes: [...BINARY_MEDIA_TYPES] });
    expect(BINARY_MEDIA_TYPES).toContain('multipart/form-data');
  });

  it.each(Object.keys(gatewayResponses) as GatewayResponseType[])(
    'answers %s in the error shape of docs/api.md with the request id',
    (type) => {
      const definition = gatewayResponses[type];
      const [response] = Object.values(resourcesOf(template(), 'AWS::ApiGateway::GatewayResponse')).filter(
        ({ Properties }) => Properties.ResponseType === type,
      );
      const { Properties } = response!;
      expect(Properties.StatusCode).toBe(definition.keepsGatewayStatus ? undefined : String(definition.status));
      const body = JSON.parse(Properties.ResponseTemplates['application/json']);
      const fromAuthorizer = (value: string | { authorizerContext: string }) =>
        typeof value === 'string' ? value : `$context.authorizer.${value.authorizerContext}`;
      expect(body).toEqual({
        error: {
          type: definition.type,
          code: fromAuthorizer(definition.code),
          message: fromAuthorizer(definition.message),
          request_id: '$context.requestId',
        },
      });
      expect(Properties.ResponseParameters).toMatchObject({ 'gatewayresponse.header.content-type': "'application/json; charset=utf-8'" });
      // Only method-request values and literals are documented sources of a gateway response header.
      for (const source of Object.values(Properties.ResponseParameters as Record<string, string>)) {
        expect(source).toMatch(/^('[^']*'|method\.request\.(header|path|querystring)\.[\w-]+)$/);
      }
      expect(Properties.ResponseParameters['gatewayresponse.header.www-authenticate']).toBe(
        definition.status === 401 ? "'Bearer'" : undefined,
      );
      // CORS: no origin configured by default.
      expect(Properties.ResponseParameters['gatewayresponse.header.vary']).toBe("'Origin'");
      expect(Properties.ResponseParameters['gatewayresponse.header.access-control-allow-origin']).toBeUndefined();
    },
  );

  it('makes unknown routes 404 route_not_found and authorizer denials 401 with the reason', () => {
    expect(gatewayResponses.MISSING_AUTHENTICATION_TOKEN).toMatchObject({ status: 404, code: 'route_not_found' });
    expect(gatewayResponses.ACCESS_DENIED).toMatchObject({ status: 401, code: { authorizerContext: 'error_code' } });
  });

  it('throttles the stage, writes JSON access logs and traces requests', () => {
    const [stage] = Object.values(resourcesOf(template(), 'AWS::ApiGateway::Stage'));
    expect(stage!.Properties).toMatchObject({
      StageName: 'prod',
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: { 'Fn::GetAtt': [expect.stringMatching(/^ApiAccessLogs/), 'Arn'] } },
      MethodSettings: [
        expect.objectContaining({
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: 50,
          ThrottlingBurstLimit: 100,
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
        }),
      ],
    });
    const format = JSON.parse(stage!.Properties.AccessLogSetting.Format);
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status', user: '$context.authorizer.principalId' });
  });

  it('outputs the API URL, the table names and the bucket name', () => {
    const outputs = template().toJSON().Outputs as Record<string, { Value: unknown }>;
    for (const name of [
      'ApiUrl',
      'ConversationsTableName',
      'AttachmentsTableName',
      'IdempotencyTableName',
      'FilesBucketName',
      'AuthSecretArn',
    ]) {
      expect(outputs[name], name).toBeDefined();
    }
    const url = (outputs.ApiUrl!.Value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    expect(url.at(-1)).toBe('/v1');
  });
});

const tableIdOf = (name: string) =>
  Object.keys(resourcesOf(template(), 'AWS::DynamoDB::Table')).find((id) => id.startsWith(`Data${name}`))!;
const queueIdOf = (name: string) =>
  Object.keys(resourcesOf(template(), 'AWS::SQS::Queue')).find((id) => id.startsWith(`Functions${name}DeadLetters`))!;
const mappingsOf = (functionName: string) =>
  Object.values(resourcesOf(template(), 'AWS::Lambda::EventSourceMapping')).filter(({ Properties }) =>
    Properties.FunctionName.Ref.startsWith(`Functions${functionName}`),
  );
/** The alarm on a dead-letter queue's first visible message. */
const alarmOn = (queueId: string) =>
  Object.values(resourcesOf(template(), 'AWS::CloudWatch::Alarm')).filter(
    ({ Properties }) =>
      Properties.Namespace === 'AWS/SQS' &&
      ref(Properties.Dimensions) === ref([{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }]),
  );

describe("cleanup from the tables' streams", () => {
  it('streams the keys of removed conversations, whole attachment records added and removed, the whole removed upload session, and nothing of Idempotency-Keys', () => {
    const streamOf = (name: string) => resourcesOf(template(), 'AWS::DynamoDB::Table')[tableIdOf(name)]!.Properties.StreamSpecification;
    expect(streamOf('Conversations')).toEqual({ StreamViewType: 'KEYS_ONLY' });
    // The cleanup reads a removed record's file key, the fan-out a new record's thread.
    expect(streamOf('Attachments')).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
    // The upload id and the attachment id are attributes of the session, not its key.
    expect(streamOf('UploadSessions')).toEqual({ StreamViewType: 'OLD_IMAGE' });
    expect(streamOf('Idempotency')).toBeUndefined();
  });

  it('feeds the three streams to the cleanup function: removals only, retried from the record a batch stopped at, bisected, then to one dead-letter queue', () => {
    const mappings = mappingsOf('Cleanup');
    expect(mappings.map(({ Properties }) => Properties.EventSourceArn['Fn::GetAtt']).sort()).toEqual(
      ['Conversations', 'Attachments', 'UploadSessions'].map((name) => [tableIdOf(name), 'StreamArn']).sort(),
    );
    const queueId = queueIdOf('Cleanup');
    for (const { Properties } of mappings) {
      expect(Properties).toMatchObject({
        FunctionName: { Ref: expect.stringMatching(/^FunctionsCleanup/) },
        StartingPosition: 'TRIM_HORIZON',
        BisectBatchOnFunctionError: true,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        MaximumRetryAttempts: 10,
        FilterCriteria: { Filters: [{ Pattern: JSON.stringify({ eventName: ['REMOVE'] }) }] },
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queueId, 'Arn'] } } },
      });
    }
  });

  it('alarms on the first batch in the dead-letter queue', () => {
    const alarms = alarmOn(queueIdOf('Cleanup'));
    expect(alarms).toHaveLength(1);
    expect(alarms[0]!.Properties).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  it('lets the cleanup read and delete attachment records, query their by_conversation index, append to feeds, delete files, abort uploads, read the streams and send to its queue, nothing else', () => {
    const statements = statementsOf(roleOf('Cleanup')).filter((s) => !isLoggingOrTracing(s));
    const streamReads = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];
    const actions = new Set(statements.flatMap((s) => s.Action).filter((action: string) => !streamReads.includes(action)));
    expect([...actions].sort()).toEqual([
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      's3:AbortMultipartUpload',
      's3:DeleteObject',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:SendMessage',
    ]);
    const resourcesOfAction = (action: string) => statements.filter((s) => s.Action.includes(action)).flatMap((s) => [s.Resource].flat());
    const attachments = { 'Fn::GetAtt': [tableIdOf('Attachments'), 'Arn'] };
    const events = { 'Fn::GetAtt': [tableIdOf('Events'), 'Arn'] };
    // Item reads on the attachments table and the feeds' heads (the upload sessions' stream carries what the cleanup needs of a session).
    expect(resourcesOfAction('dynamodb:GetItem')).toEqual([attachments, events]);
    expect(resourcesOfAction('dynamodb:DeleteItem')).toEqual([attachments]);
    expect(resourcesOfAction('dynamodb:Query')).toEqual([{ 'Fn::Join': ['', [attachments, '/index/by_conversation']] }]);
    expect(resourcesOfAction('dynamodb:UpdateItem')).toEqual([events]);
    expect(resourcesOfAction('dynamodb:PutItem')).toEqual([events]);
    expect(resourcesOfAction('s3:AbortMultipartUpload').map(ref)).toEqual([expect.stringContaining(`/${FILES_PREFIX}*`)]);
    const streamResources = statements.filter((s) => s.Action.includes('dynamodb:GetRecords')).flatMap((s) => [s.Resource].flat());
    expect(streamResources).toContainEqual({ 'Fn::GetAtt': [tableIdOf('UploadSessions'), 'StreamArn'] });
  });
});

describe('fan-out from the attachments stream', () => {
  it("feeds the attachments stream alone to the fan-out function: uploads, renames and removals, with the cleanup mapping's settings, then to a dead-letter queue of its own", () => {
    const mappings = mappingsOf('FanOut');
    expect(mappings).toHaveLength(1);
    const { Properties } = mappings[0]!;
    expect(Properties.EventSourceArn).toEqual({ 'Fn::GetAtt': [tableIdOf('Attachments'), 'StreamArn'] });
    expect(Properties.FilterCriteria).toEqual({ Filters: [{ Pattern: JSON.stringify({ eventName: ['INSERT', 'MODIFY', 'REMOVE'] }) }] });
    expect(Properties.DestinationConfig).toEqual({ OnFailure: { Destination: { 'Fn::GetAtt': [queueIdOf('FanOut'), 'Arn'] } } });
    expect(queueIdOf('FanOut')).not.toBe(queueIdOf('Cleanup'));
    expect(Properties).toMatchObject({
      StartingPosition: 'TRIM_HORIZON',
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 10,
    });
    // Every other setting (batch size, record age, ...) as the cleanup's: one place decides how a stream is consumed.
    const settings = ({ FunctionName, EventSourceArn, FilterCriteria, DestinationConfig, ...rest }: Record<string, unknown>) => rest;
    const [cleanupMapping] = mappingsOf('Cleanup').filter((mapping) =>
      ref(mapping.Properties.EventSourceArn).includes(tableIdOf('Attachments')),
    );
    expect(settings(Properties)).toEqual(settings(cleanupMapping!.Properties));
  });

  it('keeps its dead letters 14 days, encrypted and TLS-only, and alarms on the first', () => {
    const queue = resourcesOf(template(), 'AWS::SQS::Queue')[queueIdOf('FanOut')]!;
    expect(queue.Properties).toMatchObject({ MessageRetentionPeriod: 14 * 24 * 3600, SqsManagedSseEnabled: true });
    const alarms = alarmOn(queueIdOf('FanOut'));
    expect(alarms).toHaveLength(1);
    expect(alarms[0]!.Properties).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 1,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('lets the fan-out read, update, put and check (ConditionCheckItem) conversations, query their by_thread index, append to feeds, batch-read the delivered changes, read the attachments stream, settle a kept scan result and send to its queues (previews, settling and scan timers), nothing else', () => {
    const statements = statementsOf(roleOf('FanOut')).filter((s) => !isLoggingOrTracing(s));
    const conversations = { 'Fn::GetAtt': [tableIdOf('Conversations'), 'Arn'] };
    const streamReads = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];
    const resourcesOfAction = (action: string) => statements.filter((s) => s.Action.includes(action)).flatMap((s) => [s.Resource].flat());
    expect([...new Set(statements.flatMap((s) => s.Action))].sort()).toEqual(
      [
        ...streamReads,
        'dynamodb:BatchGetItem',
        'dynamodb:ConditionCheckItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:ListStreams',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:SendMessage',
      ].sort(),
    );
    const events = { 'Fn::GetAtt': [tableIdOf('Events'), 'Arn'] };
    const attachments = { 'Fn::GetAtt': [tableIdOf('Attachments'), 'Arn'] };
    for (const action of ['dynamodb:GetItem', 'dynamodb:UpdateItem'])
      expect(resourcesOfAction(action), action).toEqual([attachments, conversations, events]);
    expect(resourcesOfAction('dynamodb:PutItem')).toEqual([conversations, events]);
    expect(resourcesOfAction('dynamodb:DeleteItem')).toEqual([attachments]);
    // A side already at the upload's time is only checked in the member's transaction (a redelivery, two uploads in one second).
    expect(resourcesOfAction('dynamodb:ConditionCheckItem')).toEqual([conversations]);
    expect(resourcesOfAction('dynamodb:Query')).toEqual([{ 'Fn::Join': ['', [conversations, '/index/by_thread']] }]);
    expect(resourcesOfAction('dynamodb:BatchGetItem')).toEqual([events]);
    for (const action of streamReads)
      expect(resourcesOfAction(action), action).toEqual([{ 'Fn::GetAtt': [tableIdOf('Attachments'), 'StreamArn'] }]);
    expect(resourcesOfAction('dynamodb:ListStreams')).toEqual(['*']);
    // Its dead letters (the mapping's on-failure destination), and for SendMessage alone the queues it feeds.
    expect(resourcesOfAction('sqs:SendMessage')).toEqual([
      { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsPreviewRequests/), 'Arn'] },
      { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsThreadSettlingQueue/), 'Arn'] },
      { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsScanningScanTimerQueue/), 'Arn'] },
      { 'Fn::GetAtt': [queueIdOf('FanOut'), 'Arn'] },
    ]);
    for (const action of ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl']) {
      expect(resourcesOfAction(action), action).toEqual([{ 'Fn::GetAtt': [queueIdOf('FanOut'), 'Arn'] }]);
    }
  });
});

describe("a large thread's settling sweep", () => {
  const settlingQueueId = () =>
    Object.keys(resourcesOf(template(), 'AWS::SQS::Queue')).find((id) => id.startsWith('FunctionsThreadSettlingQueue'))!;

  it(`reads the settling timers' queue ${SETTLING_BATCH_SIZE} at a time with partial batch failures; a timer goes to its dead letters after ${SETTLING_DELIVERIES} deliveries, with an alarm on the first`, () => {
    expectTimerQueue(template(), {
      consumer: largeThreadSettlingFunction.name,
      queue: 'FunctionsThreadSettlingQueue',
      deadLetters: 'FunctionsThreadSettlingDeadLetters',
      batchSize: SETTLING_BATCH_SIZE,
      deliveries: SETTLING_DELIVERIES,
      timeoutSeconds: SETTLING_TIMEOUT_SECONDS,
      variable: 'THREAD_SETTLING_QUEUE_URL',
    });
  });

  it('lets the settling sweep read, update and check conversations, query their by_thread index, append to feeds and batch-read the events table, and read its queue, nothing else', () => {
    const statements = statementsOf(roleOf(largeThreadSettlingFunction.name)).filter((s) => !isLoggingOrTracing(s));
    const resourcesOfAction = (action: string) => statements.filter((s) => s.Action.includes(action)).flatMap((s) => [s.Resource].flat());
    const conversations = { 'Fn::GetAtt': [tableIdOf('Conversations'), 'Arn'] };
    const events = { 'Fn::GetAtt': [tableIdOf('Events'), 'Arn'] };
    const queueReads = [
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ];
    expect([...new Set(statements.flatMap((s) => s.Action))].sort()).toEqual(
      [
        'dynamodb:BatchGetItem',
        'dynamodb:ConditionCheckItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        ...queueReads,
      ].sort(),
    );
    for (const action of ['dynamodb:GetItem', 'dynamodb:UpdateItem'])
      expect(resourcesOfAction(action), action).toEqual([conversations, events]);
    expect(resourcesOfAction('dynamodb:ConditionCheckItem')).toEqual([conversations]);
    for (const action of ['dynamodb:PutItem', 'dynamodb:BatchGetItem']) expect(resourcesOfAction(action), action).toEqual([events]);
    expect(resourcesOfAction('dynamodb:Query')).toEqual([{ 'Fn::Join': ['', [conversations, '/index/by_thread']] }]);
    for (const action of queueReads) expect(resourcesOfAction(action), action).toEqual([{ 'Fn::GetAtt': [settlingQueueId(), 'Arn'] }]);
  });
});

operatorEventsTests(template);
realtimeTests(template);
previewTemplateTests(template);
scanningTemplateTests(template);

describe('the stream consumers', () => {
  it('say in their alarm, in one short line, what a failed batch left undone and which queue to redrive', () => {
    for (const name of ['Cleanup', 'FanOut', 'RealtimePublisher']) {
      const description = String(alarmOn(queueIdOf(name))[0]!.Properties.AlarmDescription);
      expect(description).toMatch(
        new RegExp(`^${name}: a stream batch failed every retry, so .+\\. Redrive ${name}DeadLetters once the cause is fixed\\.$`),
      );
      expect(description.length, description).toBeLessThanOrEqual(180);
    }
  });
});

describe('cdk-nag', () => {
  it('finds nothing unacknowledged in the AwsSolutions pack (the synth above would have failed on an error)', () => {
    expect(synthesized.validationReport.pluginReports.flatMap((report) => report.violations)).toEqual([]);
  });
});

function roleOf(routeName: string): string {
  const [fn] = Object.entries(resourcesOf(template(), 'AWS::Lambda::Function')).filter(
    ([id]) => id.startsWith(`Functions${routeName}`) && !id.includes('Logs'),
  );
  return fn![1].Properties.Role['Fn::GetAtt'][0];
}

function statementsOf(roleId: string): Json[] {
  return Object.values(resourcesOf(template(), 'AWS::IAM::Policy'))
    .filter(({ Properties }) => Properties.Roles.some((r: unknown) => ref(r) === ref({ Ref: roleId })))
    .flatMap(({ Properties }) => Properties.PolicyDocument.Statement)
    .map((statement) => ({ ...statement, Action: [statement.Action].flat() }));
}

const isLoggingOrTracing = (statement: { Action: string[] }) =>
  statement.Action.every((a) => a.startsWith('logs:') || a.startsWith('xray:'));

function indexNamesIn(resources: unknown): string[] {
  return [resources]
    .flat()
    .map((r) => ref(r).match(/\/index\/([\w-]+)/)?.[1])
    .filter((name): name is string => Boolean(name));
}
