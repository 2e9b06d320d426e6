import { createConfig, lint } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { loadOpenApi, OPENAPI_FILE } from '../../../infra/local/openapi.js';
import { routes } from '../../../shared/routes.js';
import type { Json } from '../../support/api.js';
import { OpenApiContract } from '../../support/openapi-contract.js';

const document = loadOpenApi();
const contract = new OpenApiContract(document);
const documented = contract.operations();

describe('docs/openapi.yaml', () => {
  it('passes the Redocly linter with its strict recommended rules', async () => {
    const config = await createConfig({ extends: ['recommended-strict'] });
    const problems = await lint({ ref: OPENAPI_FILE, config });
    expect(problems.map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`)).toEqual([]);
  });

  it('is OpenAPI 3.1', () => {
    expect(document.openapi).toMatch(/^3\.1\./);
  });

  it.each(routes.map((route) => [route.method, route.path]))('documents the route %s %s', (method, path) => {
    expect(documented.some((operation) => operation.method === method && operation.path === path)).toBe(true);
  });

  it('documents nothing but the routes of the route table (and their preflights)', () => {
    const documentedRoutes = documented
      .filter((operation) => operation.method !== 'OPTIONS')
      .map(({ method, path }) => `${method} ${path}`);
    expect(documentedRoutes.sort()).toEqual(routes.map((route) => `${route.method} ${route.path}`).sort());
    expect(documentedRoutes).toHaveLength(18);
  });

  it('documents a token-free CORS preflight on every path', () => {
    for (const path of Object.keys(document.paths)) {
      const preflight = documented.find((operation) => operation.method === 'OPTIONS' && operation.path === path);
      expect(preflight?.operation.security, path).toEqual([]);
    }
  });

  it('documents Idempotency-Key on exactly the routes that honour it', () => {
    for (const route of routes) {
      const operation = documented.find((candidate) => candidate.method === route.method && candidate.path === route.path)!.operation;
      const refs = (operation.parameters ?? []).map((parameter: { $ref?: string }) => parameter.$ref);
      expect(refs.includes('#/components/parameters/IdempotencyKey'), `${route.method} ${route.path}`).toBe(route.idempotent === true);
    }
  });

  it('documents 401 with WWW-Authenticate and x-request-id on every response of every authenticated operation', () => {
    for (const { method, path, operation } of documented) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
        const resolved = response.$ref ? document.components.responses[response.$ref.split('/').pop()] : response;
        expect(resolved.headers?.['x-request-id'], `${method} ${path} ${status}`).toBeDefined();
      }
      if (method !== 'OPTIONS')
        expect(operation.responses['401'], `${method} ${path}`).toEqual({ $ref: '#/components/responses/Unauthorized' });
    }
    expect(document.components.responses.Unauthorized.headers['WWW-Authenticate']).toBeDefined();
  });

  it('has examples that match their own schemas', () => {
    const checked: string[] = [];
    const visit = (node: Json, pointer: string) => {
      if (!node || typeof node !== 'object') return;
      if (node.schema && (node.example !== undefined || node.examples)) {
        const validate = contract.validator(`${pointer}/schema`);
        const examples =
          node.example !== undefined
            ? [node.example]
            : Object.values(node.examples as Record<string, Json>).map((example) =>
                example.$ref ? document.components.examples[example.$ref.split('/').pop()].value : example.value,
              );
        for (const example of examples) {
          expect(validate(example), `${pointer}: ${JSON.stringify(validate.errors)}`).toBe(true);
          checked.push(pointer);
        }
      }
      for (const [key, child] of Object.entries(node)) visit(child, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    };
    visit(document, '');
    expect(checked.length).toBeGreaterThan(20);
  });
});

describe('the response check that every integration test runs', () => {
  const headers = (extra: Record<string, string> = {}) =>
    new Headers({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r1', ...extra });
  const conversation = {
    id: 'conv_01HZY3K8Q4W6N2B7C9D5E1F0GA',
    contact_id: 'alice',
    group_id: null,
    pinned_message_id: null,
    is_pinned: false,
    is_muted: false,
    muted_until: null,
    last_active_at: null,
    last_opened_at: null,
    created_at: 1767225600,
    archived_at: null,
  };
  const check = (method: string, path: string, status: number, body: unknown, extra?: Record<string, string>) =>
    contract.check(method, path, { status, headers: headers(extra), text: body === undefined ? '' : JSON.stringify(body) });

  it('accepts a documented response', () => {
    expect(check('GET', '/v1/conversations/conv_01HZY3K8Q4W6N2B7C9D5E1F0GA?x=1', 200, conversation)).toEqual([]);
  });

  it('refuses a body that does not match the schema', () => {
    expect(check('GET', '/v1/conversations/conv_1', 200, { ...conversation, is_muted: 'no' }).join()).toMatch(/is_muted must be boolean/);
    expect(check('GET', '/v1/conversations/conv_1', 200, { ...conversation, owner: 'u' }).join()).toMatch(/additional properties/);
  });

  it('refuses a status the operation does not list', () => {
    expect(check('GET', '/v1/conversations/conv_1', 409, { error: {} }).join()).toMatch(/does not list/);
  });

  it('refuses a response without a required header', () => {
    const problems = contract.check('GET', '/v1/conversations', {
      status: 401,
      headers: new Headers({ 'content-type': 'application/json', 'x-request-id': 'r' }),
      text: JSON.stringify({ error: { type: 'authentication_error', code: 'token_missing', message: 'm', request_id: 'r' } }),
    });
    expect(problems.join()).toMatch(/WWW-Authenticate is required/);
  });

  it('refuses anything but route_not_found for an undocumented route', () => {
    const notFound = { error: { type: 'invalid_request_error', code: 'route_not_found', message: 'm', request_id: 'r' } };
    expect(check('PATCH', '/v1/conversations', 404, notFound)).toEqual([]);
    expect(check('GET', '/v1/secret', 200, conversation).length).toBeGreaterThan(0);
  });

  it('refuses a body on a response documented without one', () => {
    expect(check('OPTIONS', '/v1/conversations', 204, { unexpected: true }).join()).toMatch(/no body/);
  });
});
