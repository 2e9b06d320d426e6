import { AuthorizationType, type IResource, MockIntegration } from 'aws-cdk-lib/aws-apigateway';
import { CORS_ALLOWED_HEADERS, CORS_MAX_AGE_SECONDS } from '../../../shared/http/cors.js';

/**
 * CORS preflight on one resource: a mock integration answered by API Gateway
 * without the authorizer, with the same headers as the local emulator
 * (preflightHeaders in shared/http/cors.ts). The methods and headers are
 * fixed; Access-Control-Allow-Origin is set only for a configured origin
 * (fixed for `*`, else chosen in the mapping template, as CDK's own
 * addCorsPreflight does for several origins).
 */
export function addPreflight(resource: IResource, methods: readonly string[], allowedOrigins: readonly string[]): void {
  const fixed: Record<string, string> = {
    Vary: "'Origin'",
    'Access-Control-Allow-Methods': `'${[...methods, 'OPTIONS'].join(', ')}'`,
    'Access-Control-Allow-Headers': `'${CORS_ALLOWED_HEADERS.join(', ')}'`,
    'Access-Control-Max-Age': `'${CORS_MAX_AGE_SECONDS}'`,
    ...(allowedOrigins.includes('*') ? { 'Access-Control-Allow-Origin': "'*'" } : {}),
  };
  const header = (name: string) => `method.response.header.${name}`;
  resource.addMethod(
    'OPTIONS',
    new MockIntegration({
      requestTemplates: { 'application/json': '{"statusCode": 204}' },
      integrationResponses: [
        {
          statusCode: '204',
          responseParameters: Object.fromEntries(Object.entries(fixed).map(([name, value]) => [header(name), value])),
          responseTemplates: { 'application/json': allowOriginTemplate(allowedOrigins) },
        },
      ],
    }),
    {
      authorizationType: AuthorizationType.NONE,
      methodResponses: [
        {
          statusCode: '204',
          responseParameters: Object.fromEntries(
            [...Object.keys(fixed), 'Access-Control-Allow-Origin'].map((name) => [header(name), true]),
          ),
        },
      ],
    },
  );
}

/** VTL that echoes the request's Origin when it is one of the configured origins; empty body. */
function allowOriginTemplate(allowedOrigins: readonly string[]): string {
  const listed = allowedOrigins.filter((origin) => origin !== '*');
  if (listed.length === 0 || allowedOrigins.includes('*')) return '';
  return [
    '#set($origin = $input.params().header.get("Origin"))',
    '#if("$!origin" == "")#set($origin = $input.params().header.get("origin"))#end',
    `#if(${listed.map((origin) => `"$!origin" == "${origin.replace(/"/g, '')}"`).join(' || ')})`,
    '#set($context.responseOverride.header.Access-Control-Allow-Origin = $origin)',
    '#end',
  ].join('\n');
}
