import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';
import { callerIdentity } from '../../infra/local/gateway.js';
import type { Composition } from '../../shared/app.js';
import type { HttpHandler } from '../../shared/http/handler.js';
import { routes } from '../../shared/routes.js';
import { resourcesOf, synthesize } from '../infra/synth.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { BOUNDARY, download, filePart, multipartBody, sha256 } from '../support/attachments.js';

// `sam local start-api -t <the -c samLocal=true template>`: SAM builds each event
// itself (samcli/local/apigw/event_constructor.py). It base64-encodes a body only
// when the request's media type is one of the API's binary types, and otherwise
// decodes the bytes as UTF-8 (which fails on a JPEG: a 502 before any handler).
// Without an OpenAPI Body, SAM finds binary types only on methods whose
// Integration has ContentHandling CONVERT_TO_BINARY and a ContentType
// (samcli/lib/providers/cfn_api_provider.py). These tests apply those two rules
// to the synthesized template and give the resulting event to the real handler.

type Method = {
  Properties: { HttpMethod: string; ResourceId: unknown; Integration?: { ContentHandling?: string; ContentType?: string } };
};
const methodsOf = (synthesized: ReturnType<typeof synthesize>) =>
  Object.values(resourcesOf(synthesized.template, 'AWS::ApiGateway::Method')) as unknown as Method[];

/** The binary media types sam local collects from the template's methods. */
function samBinaryMediaTypes(methods: Method[]): Set<string> {
  const types = new Set<string>();
  for (const { Properties } of methods) {
    const integration = Properties.Integration ?? {};
    if (integration.ContentHandling === 'CONVERT_TO_BINARY' && integration.ContentType) types.add(integration.ContentType);
  }
  return types;
}

/** SAM's v1 event for a request: the body base64-encoded for a binary media type, else decoded as UTF-8. */
function samEvent(body: Buffer, contentType: string, binaryTypes: Set<string>, userId: string): APIGatewayProxyEvent {
  const mimetype = contentType.split(';')[0]!.trim().toLowerCase(); // what Flask's request.mimetype gives SAM
  const isBase64Encoded = binaryTypes.has(mimetype) || binaryTypes.has('*/*');
  const text = isBase64Encoded ? body.toString('base64') : new TextDecoder('utf-8', { fatal: true }).decode(body);
  const headers = { 'Content-Type': contentType, Host: '127.0.0.1:3001', 'X-Forwarded-Proto': 'http', 'X-Forwarded-Port': '3001' };
  return {
    body: text,
    isBase64Encoded,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    httpMethod: 'POST',
    path: '/v1/attachments',
    resource: '/v1/attachments',
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: '1234567890',
      // As our authorizer's Allow passes it on (shared/auth/policy.ts): the user and the token's groups, none here.
      authorizer: { principalId: userId, userId, groups: '[]' },
      httpMethod: 'POST',
      identity: callerIdentity('127.0.0.1', null),
      path: '/prod/v1/attachments',
      protocol: 'HTTP/1.1',
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: '123456',
      resourcePath: '/v1/attachments',
      stage: 'prod',
    },
  };
}

describe('uploads under sam local, with the -c samLocal=true template', () => {
  let t: TestApi;
  let methods: Method[];
  let binaryTypes: Set<string>;
  let uploadHandler: (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
  beforeAll(async () => {
    const synthesized = synthesize({ samLocal: 'true' });
    try {
      methods = methodsOf(synthesized);
      binaryTypes = samBinaryMediaTypes(methods);
    } finally {
      synthesized.remove();
    }
    t = await startTestApi(); // the stand-ins the functions talk to, as npm start serves them to sam local
    // The real handler module, run on the local server's Composition as SAM runs it on the function's environment.
    const entry = routes.find((route) => route.name === 'UploadAttachment')!.entry;
    uploadHandler = ((await import(pathToFileURL(join(REPOSITORY_ROOT, entry)).href)).handler as HttpHandler<Composition>).withComposition(
      t.api.composition,
    );
  });
  afterAll(() => t?.close());

  it('marks only the upload method binary, with multipart/form-data, the way SAM reads it', async () => {
    expect([...binaryTypes]).toEqual(['multipart/form-data']);
    const marked = methods.filter(({ Properties }) => Properties.Integration?.ContentHandling === 'CONVERT_TO_BINARY');
    expect(marked.map(({ Properties }) => Properties.HttpMethod)).toEqual(['POST']);
    expect(marked[0]!.Properties.ResourceId).toEqual(expect.objectContaining({ Ref: expect.stringMatching(/^ApiRestApiv1attachments/) }));
  });

  it('stores the exact bytes of a file that is not UTF-8, from the event SAM builds', async () => {
    // A JPEG's first bytes, then random ones: invalid UTF-8, which SAM could not decode as text.
    const bytes = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(64 * 1024)]);
    const body = multipartBody([filePart(bytes, 'form-data; name="file"; filename="photo.jpg"', 'image/jpeg')]);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(body)).toThrow();

    const result = await uploadHandler(samEvent(body, `multipart/form-data; boundary=${BOUNDARY}`, binaryTypes, 'sam-user'));
    expect(result.statusCode).toBe(201);
    const attachment = JSON.parse(result.body);
    expect(attachment).toMatchObject({ filename: 'photo.jpg', file_type: 'image/jpeg', file_size: bytes.length });
    const fetched = await t.call('sam-user', 'GET', `/v1/attachments/${attachment.id}`);
    expect(sha256((await download(fetched.body.file_url)).bytes)).toBe(sha256(bytes));
  });

  it('would not be able to build that event from the deployable template (no binary method there)', () => {
    const synthesized = synthesize();
    try {
      const types = samBinaryMediaTypes(methodsOf(synthesized));
      expect(types.size).toBe(0);
    } finally {
      synthesized.remove();
    }
  });
});
