import { Token } from 'aws-cdk-lib';
import { ParamsAndSecretsLayerVersion, ParamsAndSecretsVersions } from 'aws-cdk-lib/aws-lambda';
import { RegionInfo } from 'aws-cdk-lib/region-info';
import { FUNCTION_SETTINGS } from '../declarations/function-settings.js';

/** The architectures a function may run on, as Lambda names them. */
type Architecture = 'arm64' | 'x86_64';

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
export function secretsExtensionLayerArn(region: string, architecture: Architecture = FUNCTION_SETTINGS.architecture): string | undefined {
  return RegionInfo.get(region).paramsAndSecretsLambdaLayerArn(SECRETS_EXTENSION_VERSION, architecture);
}

/** Every region aws-cdk-lib knows in which the layer resolves. */
export function secretsExtensionRegions(architecture: Architecture = FUNCTION_SETTINGS.architecture): string[] {
  return RegionInfo.regions.map((info) => info.name).filter((region) => secretsExtensionLayerArn(region, architecture) !== undefined);
}

/** The sentence a synth for an unsupported region fails with: why, and what to do instead. */
export function unsupportedRegionMessage(region: string, architecture: Architecture = FUNCTION_SETTINGS.architecture): string {
  return (
    `Cannot deploy the HS256 authorizer to ${region}: the AWS Parameters and Secrets Lambda Extension ` +
    `(${SECRETS_EXTENSION_VERSION}, ${architecture}), which serves it the token secret, has no layer ARN for that region ` +
    `in aws-cdk-lib's region table. Deploy to one of ${secretsExtensionRegions(architecture).join(', ')}, ` +
    `or verify tokens from an OIDC key set instead (-c authJwksUrl=https://…), which needs no secret and no layer.`
  );
}

/**
 * The layer for the stack's region: the ARN itself when the region is known
 * at synth (`cdk deploy` always knows it), refusing a region without a layer
 * in a sentence; for a region-agnostic synth, CDK's per-region mapping.
 */
export function secretsExtensionLayer(
  region: string,
  architecture: Architecture = FUNCTION_SETTINGS.architecture,
): ParamsAndSecretsLayerVersion {
  if (Token.isUnresolved(region)) return ParamsAndSecretsLayerVersion.fromVersion(SECRETS_EXTENSION_VERSION);
  const arn = secretsExtensionLayerArn(region, architecture);
  if (!arn) throw new Error(unsupportedRegionMessage(region, architecture));
  return ParamsAndSecretsLayerVersion.fromVersionArn(arn);
}
