import { Token } from 'aws-cdk-lib';
import { ParamsAndSecretsLayerVersion, ParamsAndSecretsVersions } from 'aws-cdk-lib/aws-lambda';
import { RegionInfo } from 'aws-cdk-lib/region-info';
import { FUNCTION_SETTINGS } from '../declarations/function-settings.js';

/**
 * The AWS Parameters and Secrets Lambda Extension that serves the authorizer
 * its HS256 secret (shared/auth/extension-secret.ts). AWS publishes it as a
 * layer per region from an account of its own; aws-cdk-lib's region table is
 * the only machine-readable list of those ARNs (AWS documents no public SSM
 * parameter for them), so a region that table does not know cannot carry the
 * layer, and the stack must refuse it at synth rather than let CloudFormation
 * fail on a missing mapping key.
 */
export const SECRETS_EXTENSION_VERSION = ParamsAndSecretsVersions.V1_0_103;

/** The layer's ARN in `region`, or undefined where the extension has no known layer. */
export function secretsExtensionLayerArn(region: string): string | undefined {
  return RegionInfo.get(region).paramsAndSecretsLambdaLayerArn(SECRETS_EXTENSION_VERSION, FUNCTION_SETTINGS.architecture);
}

/** Every region aws-cdk-lib knows in which the layer resolves. */
export function secretsExtensionRegions(): string[] {
  return RegionInfo.regions.map((info) => info.name).filter((region) => secretsExtensionLayerArn(region) !== undefined);
}

/** The sentence a synth for an unsupported region fails with: why, and what to do instead. */
export function unsupportedRegionMessage(region: string): string {
  return (
    `Cannot deploy the HS256 authorizer to ${region}: the AWS Parameters and Secrets Lambda Extension ` +
    `(${SECRETS_EXTENSION_VERSION}, ${FUNCTION_SETTINGS.architecture}), which serves it the token secret, has no layer ARN for that region ` +
    `in aws-cdk-lib's region table. Deploy to one of ${secretsExtensionRegions().join(', ')}, ` +
    `or verify tokens from an OIDC key set instead (-c authJwksUrl=https://…), which needs no secret and no layer.`
  );
}

/**
 * The layer for the stack's region: the ARN itself when the region is known
 * at synth (`cdk deploy` always knows it), refusing a region without a layer
 * in a sentence; for a region-agnostic synth, CDK's per-region mapping.
 */
export function secretsExtensionLayer(region: string): ParamsAndSecretsLayerVersion {
  if (Token.isUnresolved(region)) return ParamsAndSecretsLayerVersion.fromVersion(SECRETS_EXTENSION_VERSION);
  const arn = secretsExtensionLayerArn(region);
  if (!arn) throw new Error(unsupportedRegionMessage(region));
  return ParamsAndSecretsLayerVersion.fromVersionArn(arn);
}
