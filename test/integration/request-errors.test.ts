import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';

let t: TestApi;
let conversationId: string;
beforeAll(async () => {
  t = await startTestApi();
  conversationId = (await t.call('user', 'POST', '/v1/conversations', { form: { contact_id: 'c' } })).body.id;
});
afterAll(() => t.close());

const raw = (method: string, path: string, body: string, contentType?: string) =>
  t.call('user', method, path, { body, headers: contentType ? { 'content-type': contentType } : {} });

describe('bad request bodies', () => {
  it('answers 400 body_invalid for malformed JSON', async () => {
    const response = await raw('POST', '/v1/conversations', '{"contact_id": ', 'application/json');
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'body_invalid' });
  });

  it.each(['[]', '"text"', 'null', '42'])('answers 400 body_invalid for the JSON body %s, which is not an object', async (body) => {
    const response = await raw('POST', '/v1/conversations', body, 'application/json');
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('body_invalid');
  });

  it('answers 400 body_invalid for a malformed form body', async () => {
    const response = await raw('PUT', `/v1/conversations/${conversationId}`, 'is_muted=%zz', 'application/x-www-form-urlencoded');
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('body_invalid');
  });

  it('answers 400 for a form field given twice', async () => {
    const response = await raw('POST', '/v1/conversations', 'contact_id=a&contact_id=b', 'application/x-www-form-urlencoded');
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'parameter_invalid', param: 'contact_id' });
  });

  it.each(['text/plain', 'application/xml', 'multipart/form-data; boundary=x'])('answers 415 for a %s body', async (type) => {
    const response = await raw('POST', '/v1/conversations', 'contact_id=a', type);
    expect(response.status).toBe(415);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_media_type' });
  });

  it('accepts a content type with a charset parameter', async () => {
    const response = await raw('POST', '/v1/conversations', '{"contact_id":"charset"}', 'application/json; charset=utf-8');
    expect(response.status).toBe(201);
  });
});

describe('routes', () => {
  it.each([
    ['GET', '/v1/nothing'],
    ['GET', '/v2/conversations'],
    ['PATCH', '/v1/conversations'],
    ['POST', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
  ])('answers 404 route_not_found for %s %s', async (method, path) => {
    const response = await t.call('user', method, path);
    expect(response.status).toBe(404);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'route_not_found' });
    expect(response.headers.get('x-amzn-requestid')).toBe(response.body.error.request_id);
    expect(response.headers.get('x-request-id')).toBeNull();
  });

  it('answers 413 body_too_large for a body over 10 MB', async () => {
    const response = await raw('POST', '/v1/conversations', 'x'.repeat(10 * 1024 * 1024 + 1), 'application/json');
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe('body_too_large');
  });
});

describe('every response', () => {
  it('carries x-request-id equal to the request_id of an error body', async () => {
    const response = await t.call('user', 'GET', '/v1/conversations/conv_01ARZ3NDEKTSV4RRFFQ69G5FAV');
    expect(response.status).toBe(404);
    expect(response.body.error.request_id).toBe(response.headers.get('x-request-id'));
    expect(response.text).not.toMatch(/stack|arn:|dynamo|Exception/i);
  });
});
