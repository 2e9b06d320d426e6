import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayAuthorizerResult, APIGatewayProxyEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAMBDA_MAX_INVOKE_PAYLOAD_BYTES } from '../../infra/declarations/gateway-settings.js';
import { createGateway, invocationPayloadBytes, type LoadedRoute } from '../../infra/local/gateway.js';
import type { Route } from '../../shared/routes.js';

// What API Gateway does between the authorizer and the function, seen over HTTP:
// the invocation Lambda refuses for size (on a stage without the size guard, which
// otherwise refuses such bodies first: gateway-size-guard.test.ts), and a function that throws.
const route = (name: string, path: string): Route => ({ name, method: 'POST', path, entry: 'none', access: {} });
const allowAll = async (): Promise<APIGatewayAuthorizerResult> => ({
  principalId: 'someone',
  policyDocument: { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: '*' }] },
});

describe('the gateway emulator between the authorizer and the function', () => {
  let server: Server;
  let url: string;
  const invoked: string[] = [];
  const routes: LoadedRoute[] = [
    {
      // Answers the size of the payload it was invoked with: the event as JSON, measured here independently.
      route: route('Echo', '/echo'),
      handler: async (event: APIGatewayProxyEvent) => {
        invoked.push('Echo');
        const bytes = Buffer.byteLength(JSON.stringify(event));
        return { statusCode: 200, body: JSON.stringify({ bytes, counted: invocationPayloadBytes(event) }) };
      },
    },
    {
      route: route('Throw', '/throw'),
      handler: async () => {
        invoked.push('Throw');
        throw new Error('boom');
      },
    },
  ];
  beforeAll(async () => {
    server = createServer(createGateway({ routes, authorizer: allowAll, corsOrigins: [], webAcl: () => undefined }));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  const post = (path: string, body: string | Buffer, type = 'application/json') =>
    fetch(`${url}${path}`, { method: 'POST', body, headers: { authorization: 'Bearer t', 'content-type': type } });

  it('invokes the function with an event of exactly 6,291,456 bytes, and refuses one byte more with API Gateway’s own 413 Request Too Long', async () => {
    // Same digit count for Content-Length in the probe and the real requests, so only the body changes the size.
    const probeLength = 6_000_000;
    const probe = (await (await post('/echo', 'x'.repeat(probeLength))).json()) as { bytes: number; counted: number };
    expect(probe.counted).toBe(probe.bytes);
    const atLimit = probeLength + (LAMBDA_MAX_INVOKE_PAYLOAD_BYTES - probe.bytes);

    const accepted = await post('/echo', 'x'.repeat(atLimit));
    expect(accepted.status).toBe(200);
    expect(((await accepted.json()) as { bytes: number }).bytes).toBe(LAMBDA_MAX_INVOKE_PAYLOAD_BYTES);

    invoked.length = 0;
    const refused = await post('/echo', 'x'.repeat(atLimit + 1));
    expect(refused.status).toBe(413);
    expect(refused.headers.get('x-amzn-errortype')).toBe('BadRequestException');
    expect(await refused.json()).toEqual({ message: 'Request Too Long' });
    expect(invoked).toEqual([]);
  });

  it('counts a binary body as the base64 text Lambda receives, JSON escapes of a text body included', async () => {
    const binary = (await (await post('/echo', randomBytes(30_000), 'multipart/form-data; boundary=x')).json()) as {
      bytes: number;
      counted: number;
    };
    expect(binary.counted).toBe(binary.bytes);
    const escaped = (await (await post('/echo', '"\\\n\u0001é😀'.repeat(1000))).json()) as { bytes: number; counted: number };
    expect(escaped.counted).toBe(escaped.bytes);
  });

  it('answers a function that throws with 502 in the error shape, as API Gateway answers a function error', async () => {
    const response = await post('/throw', '{}');
    expect(response.status).toBe(502);
    const body = (await response.json()) as { error: Record<string, string> };
    expect(body.error).toMatchObject({ type: 'api_error', code: 'internal_error', request_id: response.headers.get('x-amzn-requestid') });
    expect(JSON.stringify(body)).not.toContain('boom');
  });
});

describe('the gateway emulator at the function timeout', () => {
  const TIMEOUT_MS = 300;
  let server: Server;
  let url: string;
  const remainingAtStart: number[] = [];
  const routes: LoadedRoute[] = [
    { route: route('Hang', '/hang'), handler: () => new Promise(() => {}) },
    {
      route: route('InTime', '/in-time'),
      handler: async (_event, time) => {
        if (!time) throw new Error('the gateway invoked the function without its time');
        remainingAtStart.push(time.getRemainingTimeInMillis());
        return { statusCode: 200, body: '{}' };
      },
    },
  ];
  let authorizerHangs = false;
  const authorizer = (): Promise<APIGatewayAuthorizerResult> => (authorizerHangs ? new Promise(() => {}) : allowAll());
  beforeAll(async () => {
    server = createServer(
      createGateway({
        routes,
        authorizer,
        corsOrigins: [],
        webAcl: () => undefined,
        functionTimeoutMs: TIMEOUT_MS,
        authorizerCacheSeconds: 0,
      }),
    );
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  const post = (path: string) =>
    fetch(`${url}${path}`, { method: 'POST', body: '{}', headers: { authorization: 'Bearer t', 'content-type': 'application/json' } });

  it('answers a function that has not answered by its timeout with 502 in the error shape, as API Gateway answers a timed-out function', async () => {
    const response = await post('/hang');
    expect(response.status).toBe(502);
    const body = (await response.json()) as { error: Record<string, string> };
    expect(body.error).toMatchObject({ type: 'api_error', code: 'internal_error', request_id: response.headers.get('x-amzn-requestid') });
  });

  it('gives the function the time it has left, as Lambda’s context does', async () => {
    expect((await post('/in-time')).status).toBe(200);
    expect(remainingAtStart).toHaveLength(1);
    expect(remainingAtStart[0]).toBeGreaterThan(0);
    expect(remainingAtStart[0]).toBeLessThanOrEqual(TIMEOUT_MS);
  });

  it('answers an authorizer that has not answered by its timeout with 500, as any authorizer failure', async () => {
    authorizerHangs = true;
    try {
      const response = await post('/in-time');
      expect(response.status).toBe(500);
      expect(((await response.json()) as { error: Record<string, string> }).error).toMatchObject({ type: 'api_error' });
    } finally {
      authorizerHangs = false;
    }
  });
});
