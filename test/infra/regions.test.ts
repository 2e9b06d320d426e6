import { RegionInfo } from 'aws-cdk-lib/region-info';
import { describe, expect, it } from 'vitest';
import { messagingApp } from '../../infra/stack/messaging-app.js';
import {
  secretsExtensionLayer,
  secretsExtensionLayerArn,
  secretsExtensionRegions,
  unsupportedRegionMessage,
} from '../../infra/stack/secrets-extension.js';
import { resourcesOf, synthesize, testContext } from './synth.js';

// `cdk deploy` synthesizes for the region it deploys to: the authorizer's secrets-extension
// layer must resolve there, or the synth must stop with a sentence that says why and what to do.
const layerArn = (region: string) =>
  new RegExp(`^arn:aws[a-z-]*:lambda:${region}:\\d{12}:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:\\d+$`);
const authorizerLayers = (template: ReturnType<typeof synthesize>['template']) =>
  Object.values(resourcesOf(template, 'AWS::Lambda::Function')).flatMap(({ Properties }) => Properties.Layers ?? []);

/**
 * Regions where AWS publishes the extension's Arm64 layer, with the account
 * that publishes it there, as AWS's documentation lists them ("AWS Parameters
 * and Secrets Lambda Extension ARNs"): written here, not read from
 * aws-cdk-lib, so the checks below do not compare the code with itself.
 */
const PUBLISHED = {
  'us-east-1': '177933569100',
  'us-east-2': '590474943231',
  'us-west-2': '345057560386',
  'eu-west-1': '015030872274',
  'eu-central-1': '187925254637',
  'ap-northeast-1': '133490724326',
} as const;
/** A region the pinned version has no layer in (the synth refuses it below). */
const WITHOUT_LAYER = 'il-central-1';
const namedInSentence = (message: string) => /Deploy to one of (.+?), or verify/.exec(message)?.[1]?.split(', ') ?? [];

describe('the secrets-extension layer in every region aws-cdk-lib knows', () => {
  const regions = RegionInfo.regions.map((info) => info.name);

  it.each(regions)('%s: resolves to the layer ARN of that region, or is refused with the sentence', (region) => {
    const arn = secretsExtensionLayerArn(region);
    if (arn) {
      expect(arn).toMatch(layerArn(region));
      expect(() => secretsExtensionLayer(region)).not.toThrow();
    } else {
      expect(() => secretsExtensionLayer(region)).toThrow(unsupportedRegionMessage(region));
    }
  });

  it('stops the synth of the stack for a region without the layer, with that sentence', () => {
    expect(() => messagingApp({ context: testContext() }, { region: WITHOUT_LAYER })).toThrow(unsupportedRegionMessage(WITHOUT_LAYER));
  });

  it('names the regions that work, and JWKS mode, in the sentence', () => {
    const message = unsupportedRegionMessage('il-central-1');
    expect(message).toContain('il-central-1');
    expect(message).toContain('-c authJwksUrl=');
    const named = namedInSentence(message);
    for (const region of Object.keys(PUBLISHED)) expect(named).toContain(region);
    expect(named).not.toContain(WITHOUT_LAYER);
    // Every region it names takes the stack's layer.
    for (const region of named) expect(() => secretsExtensionLayer(region), region).not.toThrow();
  });

  it.each(Object.entries(PUBLISHED))("%s: the layer is AWS's, from account %s", (region, account) => {
    expect(secretsExtensionLayerArn(region)).toMatch(layerArn(region));
    expect(secretsExtensionLayerArn(region)).toContain(`:${region}:${account}:layer:`);
  });

  it.each(['us-east-1', 'eu-west-1'])('synthesizes for %s with that region’s layer ARN written out', (region) => {
    const outdir = synthesizeFor(region);
    try {
      // Both authorizers, the REST API's and the Event API's, read the secret through the extension.
      expect(authorizerLayers(outdir.template)).toEqual([secretsExtensionLayerArn(region), secretsExtensionLayerArn(region)]);
    } finally {
      outdir.remove();
    }
  });

  it('runs every function on x86_64 with -c architecture=x86_64, the authorizers with the x86_64 layer; refuses another architecture', () => {
    const synthesized = synthesizeFor('eu-west-1', { architecture: 'x86_64' });
    try {
      const architectures = Object.values(resourcesOf(synthesized.template, 'AWS::Lambda::Function')).map(
        ({ Properties }) => Properties.Architectures,
      );
      expect(new Set(architectures.map((value) => JSON.stringify(value)))).toEqual(new Set([JSON.stringify(['x86_64'])]));
      const layers = authorizerLayers(synthesized.template);
      expect(layers).toEqual([secretsExtensionLayerArn('eu-west-1', 'x86_64'), secretsExtensionLayerArn('eu-west-1', 'x86_64')]);
      expect(layers[0]).toMatch(/:layer:AWS-Parameters-and-Secrets-Lambda-Extension:\d+$/);
    } finally {
      synthesized.remove();
    }
    expect(() => messagingApp({ context: testContext({ architecture: 'x64' }) })).toThrow(/architecture must be arm64 or x86_64/);
  });

  it('synthesizes a stack for a region without the layer when tokens come from a JWKS URL (no secret, no layer)', () => {
    const synthesized = synthesizeFor('il-central-1', { authJwksUrl: 'https://issuer.example/.well-known/jwks.json' });
    try {
      expect(authorizerLayers(synthesized.template)).toEqual([]);
    } finally {
      synthesized.remove();
    }
  });

  it('maps, in a region-agnostic template, exactly the regions where the layer resolves', () => {
    const synthesized = synthesize();
    try {
      const mappings = synthesized.template.toJSON().Mappings as Record<string, Record<string, unknown>>;
      const layerMapping = Object.values(mappings).find((mapping) =>
        JSON.stringify(mapping).includes('AWS-Parameters-and-Secrets-Lambda-Extension-Arm64'),
      );
      const mapped = layerMapping as Record<string, unknown>;
      expect(Object.keys(mapped).sort()).toEqual(secretsExtensionRegions().sort());
      for (const [region, account] of Object.entries(PUBLISHED))
        expect(JSON.stringify(mapped[region]), region).toContain(`:${account}:layer:`);
      expect(Object.keys(mapped)).not.toContain(WITHOUT_LAYER);
    } finally {
      synthesized.remove();
    }
  });
});

function synthesizeFor(region: string, context: Record<string, unknown> = {}) {
  return synthesize(context, {}, { region });
}
