import { describe, expect, it } from 'vitest';
import { bundledFunctions, REFERENCE_NAME } from '../../../bench/bundles.js';
import { firstRequests } from '../../../bench/cold-start.js';
import { authorizerFunction, realtimeAuthorizerFunction, stackFunctions } from '../../../infra/declarations/function-settings.js';
import { routes } from '../../../shared/routes.js';

const names = (functions: readonly { name: string }[]) => functions.map(({ name }) => name);

describe('the bench covers every function the stack deploys', () => {
  it("lists the route table and the other functions as the stack's functions, once each", () => {
    expect(names(stackFunctions)).toEqual(
      expect.arrayContaining([
        ...names(routes),
        'Authorizer',
        'Cleanup',
        'FanOut',
        'EventDetail',
        'RealtimePublisher',
        'RealtimeAuthorizer',
      ]),
    );
    expect(new Set(names(stackFunctions)).size).toBe(stackFunctions.length);
  });

  it('bundles each of them with its entry, and the reference; the authorizers held to the smaller limit', () => {
    const bundled = bundledFunctions();
    expect(bundled.map(({ name, entry }) => ({ name, entry }))).toEqual([
      ...stackFunctions.map(({ name, entry }) => ({ name, entry })),
      expect.objectContaining({ name: REFERENCE_NAME }),
    ]);
    const limitOf = (name: string) => bundled.find((fn) => fn.name === name)!.limitBytes;
    expect(limitOf(authorizerFunction.name)).toBeLessThan(limitOf('GetConversation'));
    expect(limitOf(realtimeAuthorizerFunction.name)).toBe(limitOf(authorizerFunction.name));
  });

  it('has a first request for the cold start of every bundle, and none for a function that does not exist', () => {
    expect(Object.keys(firstRequests).sort()).toEqual(names(bundledFunctions()).sort());
  });
});
