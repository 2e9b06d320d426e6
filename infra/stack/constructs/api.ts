import { Duration, Validations } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  type CfnMethod,
  EndpointType,
  IdentitySource,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
  TokenAuthorizer,
} from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { CORS_EXPOSED_HEADERS, type GatewayAllowOrigin, gatewayAllowOrigin } from '../../../shared/http/cors.js';
import { errorBody } from '../../../shared/http/errors.js';
import { type Route, routes } from '../../../shared/routes.js';
import {
  authenticationChallenge,
  type GatewayResponse,
  type GatewayResponseType,
  gatewayResponses,
} from '../../declarations/gateway-responses.js';
import { BEARER_HEADER_PATTERN, BINARY_MEDIA_TYPES } from '../../declarations/gateway-settings.js';
import type { StackSettings } from '../stack-settings.js';
import { addPreflight } from './preflight.js';
import { removalPolicyFor } from './removal-policy.js';
import { SizeGuard } from './size-guard.js';

export const STAGE_NAME = 'prod';

export interface ApiProps {
  settings: StackSettings;
  handlers: ReadonlyMap<Route, IFunction>;
  authorizer: IFunction;
}

/** The REST API: one method per route, every one behind the TOKEN authorizer. */
export class Api extends Construct {
  readonly restApi: RestApi;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const { settings } = props;
    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: RetentionDays.THREE_MONTHS,
      removalPolicy: removalPolicyFor(settings.ephemeral),
    });

    this.restApi = new RestApi(this, 'RestApi', {
      description: 'Messaging API: conversations and attachments',
      endpointTypes: [EndpointType.REGIONAL],
      // Without these, API Gateway turns multipart uploads into UTF-8 text and corrupts them.
      binaryMediaTypes: [...BINARY_MEDIA_TYPES],
      // Access and execution logs need the account's API Gateway CloudWatch role.
      cloudWatchRole: true,
      deployOptions: {
        stageName: STAGE_NAME,
        throttlingRateLimit: settings.throttling.rateLimit,
        throttlingBurstLimit: settings.throttling.burstLimit,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: accessLogFormat,
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        tracingEnabled: true,
      },
    });

    const authorizer = new TokenAuthorizer(this, 'TokenAuthorizer', {
      handler: props.authorizer,
      identitySource: IdentitySource.header('Authorization'),
      validationRegex: BEARER_HEADER_PATTERN,
      // The authorizer allows the whole API (shared/auth/policy.ts), so one cached answer serves every route.
      resultsCacheTtl: Duration.seconds(300),
    });

    for (const route of routes) {
      const handler = props.handlers.get(route);
      if (!handler) throw new Error(`No function for route ${route.name}`);
      const method = this.restApi.root
        .resourceForPath(route.path)
        .addMethod(route.method, new LambdaIntegration(handler, { allowTestInvoke: false }), { authorizer });
      if (settings.samLocal && route.binaryBody) markBinaryForSamLocal(method.node.defaultChild as CfnMethod);
    }
    // Browsers preflight every resource, without a token.
    for (const path of new Set(routes.map((route) => route.path))) {
      const methods = routes.filter((route) => route.path === path).map((route) => route.method);
      addPreflight(this.restApi.root.resourceForPath(path), methods, settings.corsOrigins);
    }

    const cors = gatewayAllowOrigin(settings.corsOrigins);
    for (const [type, definition] of Object.entries(gatewayResponses) as [GatewayResponseType, GatewayResponse][]) {
      this.restApi.addGatewayResponse(type, { type: ResponseType.of(type), ...renderGatewayResponse(definition, cors) });
    }

    // sam local has no WAF: its template leaves the guard out (docs/deploying.md says what differs).
    if (settings.samLocal) {
      acknowledge(
        this.restApi,
        'AwsSolutions-APIG3',
        'The samLocal template is never deployed and sam local runs no WAF; the deployed stack has the size guard web ACL.',
      );
    } else {
      new SizeGuard(this, 'SizeGuard', { stage: this.restApi.deploymentStage });
    }

    acknowledge(
      this.restApi,
      'AwsSolutions-APIG2',
      'Every handler validates its parameters and answers 400 in the error shape of docs/api.md; a gateway validator would answer in another shape.',
    );
    acknowledge(
      this.restApi,
      'AwsSolutions-COG4',
      'Methods use a TOKEN Lambda authorizer that verifies JWTs: HS256 with the stack secret, or RS256/ES256 from any OIDC JWKS URL, a Cognito user pool included.',
    );
    acknowledge(
      this.restApi,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      'The account-wide API Gateway logging role: this AWS managed policy is the documented one for it and follows the log groups API Gateway creates.',
    );
  }
}

const acknowledge = (scope: Construct, id: string, reason: string) => Validations.of(scope).acknowledge({ id, reason });

/**
 * sam local reads the RestApi's BinaryMediaTypes only from an OpenAPI Body,
 * which CDK's API has not; it does read a method whose integration converts
 * to binary and names a content type (samcli cfn_api_provider), and then
 * base64-encodes request bodies of that type as API Gateway does. The
 * integration's ContentType is not a CloudFormation property, so this is
 * for the samLocal template only, which is never deployed.
 */
function markBinaryForSamLocal(method: CfnMethod): void {
  if (BINARY_MEDIA_TYPES.length !== 1) throw new Error('sam local takes one binary content type per method');
  method.addPropertyOverride('Integration.ContentHandling', 'CONVERT_TO_BINARY');
  method.addPropertyOverride('Integration.ContentType', BINARY_MEDIA_TYPES[0]);
  Validations.of(method).acknowledge({
    id: 'CloudFormation-Validate::F3002',
    reason: 'Integration.ContentType is read by sam local only; the samLocal template is never deployed.',
  });
}

/**
 * A gateway response in the error shape of docs/api.md: the body comes from
 * errorBody (shared/http/errors.ts) with API Gateway's `$context` variables
 * in place of the request's values.
 */
export function renderGatewayResponse(definition: GatewayResponse, cors: GatewayAllowOrigin = { kind: 'none' }) {
  const value = (v: string | { authorizerContext: string }) => (typeof v === 'string' ? v : `$context.authorizer.${v.authorizerContext}`);
  const body = errorBody({ type: definition.type, code: value(definition.code), message: value(definition.message) }, '$context.requestId');
  const challenge = definition.status === 401 ? authenticationChallenge : {};
  return {
    ...(definition.keepsGatewayStatus ? {} : { statusCode: String(definition.status) }),
    // No x-request-id header: a gateway response maps headers only from the method request or
    // literals (API Gateway's gateway-response reference), never from $context. The id is in the
    // body (`$context.requestId`, valid in its template) and in API Gateway's own x-amzn-RequestId.
    responseHeaders: {
      'content-type': "'application/json; charset=utf-8'",
      ...Object.fromEntries(Object.entries(challenge).map(([name, v]) => [name, `'${v}'`])),
      ...gatewayCorsHeaders(cors),
    },
    templates: { 'application/json': JSON.stringify(body) },
  };
}

/** CORS headers of the gateway's own answers, by the rule the local emulator follows too. */
function gatewayCorsHeaders(cors: GatewayAllowOrigin): Record<string, string> {
  if (cors.kind === 'none') return { vary: "'Origin'" };
  return {
    vary: "'Origin'",
    'access-control-expose-headers': `'${CORS_EXPOSED_HEADERS.join(', ')}'`,
    'access-control-allow-origin': cors.kind === 'fixed' ? `'${cors.origin}'` : 'method.request.header.Origin',
  };
}

/** One JSON object per request; the authorizer's error code says why a token was refused. */
const accessLogFormat = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    ip: '$context.identity.sourceIp',
    requestTime: '$context.requestTimeEpoch',
    httpMethod: '$context.httpMethod',
    resourcePath: '$context.resourcePath',
    status: '$context.status',
    protocol: '$context.protocol',
    responseLength: '$context.responseLength',
    user: '$context.authorizer.principalId',
    authError: '$context.authorizer.error_code',
    error: '$context.error.message',
    integrationLatency: '$context.integrationLatency',
    latency: '$context.responseLatency',
  }),
);
