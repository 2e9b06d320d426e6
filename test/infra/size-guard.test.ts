import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BINARY_CONTENT_TYPE_PATTERN,
  decimalAtMost,
  MAX_BINARY_BODY_BYTES,
  MAX_TEXT_BODY_BYTES,
  refusingRule,
  sizeGuardRules,
} from '../../infra/declarations/size-guard.js';
import type { Json } from '../support/api.js';
import { resourcesOf, type Synthesized, synthesize } from './synth.js';

// The web ACL as CloudFormation receives it, read back and run the way WAF documents its statements,
// so that the deployed guard is shown to decide as the emulator's (infra/declarations/size-guard.ts) does.
let synthesized: Synthesized;
beforeAll(() => {
  synthesized = synthesize();
});
afterAll(() => synthesized?.remove());

type Statement = Record<string, Json>;
interface Request {
  method: string;
  headers: Record<string, string>;
}

/** WAF's reading of a statement: an absent header matches no regex and has no size above 0. */
function wafMatches(statement: Statement, request: Request): boolean {
  if (statement.AndStatement) return statement.AndStatement.Statements.every((part: Statement) => wafMatches(part, request));
  if (statement.OrStatement) return statement.OrStatement.Statements.some((part: Statement) => wafMatches(part, request));
  if (statement.NotStatement) return !wafMatches(statement.NotStatement.Statement, request);
  const inner = statement.RegexMatchStatement ?? statement.SizeConstraintStatement;
  expect(inner.TextTransformations).toEqual([{ Priority: 0, Type: 'NONE' }]);
  const field = inner.FieldToMatch;
  const value = field.Method ? request.method : request.headers[String(field.SingleHeader.Name).toLowerCase()];
  if (value === undefined) return false;
  if (statement.RegexMatchStatement) return new RegExp(inner.RegexString).test(value);
  expect(inner.ComparisonOperator).toBe('GT');
  return Buffer.byteLength(value) > inner.Size;
}

const webAcl = () => {
  const acls = Object.entries(resourcesOf(synthesized.template, 'AWS::WAFv2::WebACL'));
  expect(acls).toHaveLength(1);
  return acls[0]!;
};

describe('the size guard web ACL', () => {
  it('is regional, allows by default and blocks with one rule per guard rule, in order', () => {
    const [, { Properties }] = webAcl();
    expect(Properties).toMatchObject({ Scope: 'REGIONAL', DefaultAction: { Allow: {} } });
    expect(Properties.Rules.map((rule: Statement) => [rule.Name, rule.Priority, rule.Action])).toEqual(
      sizeGuardRules.map((rule, index) => [rule.name, index, { Block: {} }]),
    );
    for (const rule of Properties.Rules)
      expect(rule.VisibilityConfig).toMatchObject({ MetricName: rule.Name, CloudWatchMetricsEnabled: true });
  });

  it('compares Content-Length and Content-Type with the guard’s patterns, each within WAF’s 200 characters', () => {
    const [, { Properties }] = webAcl();
    const patterns: string[] = [];
    const collect = (statement: Statement): void => {
      for (const value of Object.values(statement)) {
        if (value && typeof value === 'object') collect(value);
      }
      if (typeof statement.RegexString === 'string') patterns.push(statement.RegexString);
    };
    collect(Properties.Rules);
    expect(patterns).toEqual(
      expect.arrayContaining([BINARY_CONTENT_TYPE_PATTERN, decimalAtMost(MAX_BINARY_BODY_BYTES), decimalAtMost(MAX_TEXT_BODY_BYTES)]),
    );
    for (const pattern of patterns) expect(pattern.length).toBeLessThanOrEqual(200);
  });

  it('decides every request as the emulator does: the first matching rule is the one the emulator names', () => {
    const [, { Properties }] = webAcl();
    const length = fc.oneof(
      fc.constantFrom(MAX_BINARY_BODY_BYTES, MAX_TEXT_BODY_BYTES).chain((limit) => fc.integer({ min: limit - 2, max: limit + 2 })),
      fc.nat({ max: 20_000_000 }),
    );
    const contentLength = fc.oneof(
      length.map(String),
      length.map((n) => `00${n} `),
      fc.constantFrom('', '-1', '5, 5', '1e9'),
    );
    const request = fc.record(
      {
        method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'),
        headers: fc.record(
          {
            'content-type': fc.constantFrom(
              'multipart/form-data; boundary=x',
              'multipart/form-data',
              'Multipart/Form-Data; boundary=x',
              'application/json',
              'multipart/form-datax',
            ),
            'content-length': contentLength,
            'transfer-encoding': fc.constantFrom('chunked', ''),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: ['method', 'headers'] },
    );
    fc.assert(
      fc.property(request, ({ method, headers }) => {
        const blocking = Properties.Rules.find((rule: Statement) => wafMatches(rule.Statement, { method, headers }));
        const emulated = refusingRule({ method, header: (name) => headers[name as keyof typeof headers] });
        expect(blocking?.Name).toBe(emulated?.name);
      }),
      { numRuns: 1000 },
    );
  });

  it('is associated with the API’s stage, after the stage exists', () => {
    const [aclId] = webAcl();
    const [stageId] = Object.keys(resourcesOf(synthesized.template, 'AWS::ApiGateway::Stage'));
    const associations = Object.values(resourcesOf(synthesized.template, 'AWS::WAFv2::WebACLAssociation')) as {
      Properties: Json;
      DependsOn?: string[];
    }[];
    expect(associations).toHaveLength(1);
    const [association] = associations;
    expect(association!.Properties.WebACLArn).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
    const arn = JSON.stringify(association!.Properties.ResourceArn);
    expect(arn).toContain(':apigateway:');
    expect(arn).toContain('/restapis/');
    expect(arn).toContain('/stages/');
    expect(arn).toContain(JSON.stringify({ Ref: stageId }));
    expect(association!.DependsOn).toContain(stageId);
  });

  it('answers a blocked request with the WAF_FILTERED gateway response: 413 body_too_large', () => {
    const responses = Object.values(resourcesOf(synthesized.template, 'AWS::ApiGateway::GatewayResponse')).filter(
      ({ Properties }) => Properties.ResponseType === 'WAF_FILTERED',
    );
    expect(responses).toHaveLength(1);
    expect(responses[0]!.Properties.StatusCode).toBe('413');
    expect(JSON.parse(responses[0]!.Properties.ResponseTemplates['application/json']).error).toMatchObject({
      code: 'body_too_large',
      request_id: '$context.requestId',
    });
  });
});

describe('the samLocal template', () => {
  it('has no web ACL: sam local runs no WAF (docs/deploying.md says what differs)', () => {
    const sam = synthesize({ samLocal: 'true' });
    try {
      expect(Object.keys(resourcesOf(sam.template, 'AWS::WAFv2::WebACL'))).toEqual([]);
      expect(Object.keys(resourcesOf(sam.template, 'AWS::WAFv2::WebACLAssociation'))).toEqual([]);
    } finally {
      sam.remove();
    }
  });
});
