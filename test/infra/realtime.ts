import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { BEARER_HEADER_PATTERN } from '../../infra/declarations/gateway-settings.js';
import { BUS_FILTER_PATTERN } from '../../shared/events/bus.js';
import { GetRealtime } from '../../shared/routes.js';
import { resourcesOf } from './synth.js';

/**
 * The push side on AppSync Events (infra/stack/constructs/realtime.ts), pinned as
 * synthesized: who may connect, subscribe and publish, the publisher's feed
 * from the events stream and its one grant. Run by stack.test.ts on its
 * synthesized template.
 */
export function realtimeTests(template: () => Template): void {
  const idOf = (type: string, prefix: string) => {
    const ids = Object.keys(resourcesOf(template(), type)).filter(
      (id) => id.startsWith(prefix) && !id.includes('Logs') && !id.includes('Role'),
    );
    expect(ids, `${type} ${prefix}`).toHaveLength(1);
    return ids[0]!;
  };
  const eventApi = () => Object.values(resourcesOf(template(), 'AWS::AppSync::Api'))[0]!;
  const statementsOfRole = (roleId: string) =>
    Object.values(resourcesOf(template(), 'AWS::IAM::Policy'))
      .filter(({ Properties }) => Properties.Roles.some((role: unknown) => JSON.stringify(role) === JSON.stringify({ Ref: roleId })))
      .flatMap(({ Properties }) => Properties.PolicyDocument.Statement)
      .map((statement) => ({ ...statement, Action: [statement.Action].flat() }));
  const roleOf = (functionId: string) =>
    resourcesOf(template(), 'AWS::Lambda::Function')[functionId]!.Properties.Role['Fn::GetAtt'][0] as string;

  describe('the Event API', () => {
    it('is one Event API whose connections and subscriptions our Lambda authorizer decides, uncached, and whose publishes take IAM only', () => {
      expect(Object.keys(resourcesOf(template(), 'AWS::AppSync::Api'))).toHaveLength(1);
      const config = eventApi().Properties.EventConfig;
      const authorizerId = idOf('AWS::Lambda::Function', 'FunctionsRealtimeAuthorizer');
      expect(config.AuthProviders).toEqual([
        {
          AuthType: 'AWS_LAMBDA',
          LambdaAuthorizerConfig: {
            AuthorizerUri: { 'Fn::GetAtt': [authorizerId, 'Arn'] },
            AuthorizerResultTtlInSeconds: 0,
            IdentityValidationExpression: BEARER_HEADER_PATTERN,
          },
        },
        { AuthType: 'AWS_IAM' },
      ]);
      expect(config.ConnectionAuthModes).toEqual([{ AuthType: 'AWS_LAMBDA' }]);
      expect(config.DefaultSubscribeAuthModes).toEqual([{ AuthType: 'AWS_LAMBDA' }]);
      expect(config.DefaultPublishAuthModes).toEqual([{ AuthType: 'AWS_IAM' }]);
      const invoke = Object.values(resourcesOf(template(), 'AWS::Lambda::Permission')).filter(
        ({ Properties }) => Properties.Principal === 'appsync.amazonaws.com',
      );
      expect(invoke).toHaveLength(1);
      expect(invoke[0]!.Properties.FunctionName).toEqual({ 'Fn::GetAtt': [authorizerId, 'Arn'] });
    });

    it('has one namespace, inbox: subscribe with the authorizer, publish with IAM', () => {
      const namespaces = Object.values(resourcesOf(template(), 'AWS::AppSync::ChannelNamespace'));
      expect(namespaces).toHaveLength(1);
      expect(namespaces[0]!.Properties).toMatchObject({
        Name: 'inbox',
        SubscribeAuthModes: [{ AuthType: 'AWS_LAMBDA' }],
        PublishAuthModes: [{ AuthType: 'AWS_IAM' }],
      });
      expect(namespaces[0]!.Properties.CodeHandlers).toBeUndefined();
    });

    it("runs the REST authorizer's token settings in its authorizer, which reads the same secret and touches nothing else", () => {
      const functions = resourcesOf(template(), 'AWS::Lambda::Function');
      const rest = functions[idOf('AWS::Lambda::Function', 'FunctionsAuthorizer')]!.Properties.Environment.Variables;
      const realtime = functions[idOf('AWS::Lambda::Function', 'FunctionsRealtimeAuthorizer')]!.Properties.Environment.Variables;
      expect(realtime).toEqual(rest);
      const actions = statementsOfRole(roleOf(idOf('AWS::Lambda::Function', 'FunctionsRealtimeAuthorizer'))).flatMap(
        (statement) => statement.Action,
      );
      expect(actions.filter((action: string) => !action.startsWith('logs:') && !action.startsWith('xray:'))).toEqual([
        'secretsmanager:GetSecretValue',
        'secretsmanager:DescribeSecret',
      ]);
    });
  });

  describe('the publisher', () => {
    const publisherId = () => idOf('AWS::Lambda::Function', 'FunctionsRealtimePublisher');

    it('is the second and last reader of the events stream, beside the pipe: new event items from the newest on, bisecting, retried, dead-lettered with an alarm, and after a minute', () => {
      const eventsTableId = idOf('AWS::DynamoDB::Table', 'DataEvents');
      const stream = { 'Fn::GetAtt': [eventsTableId, 'StreamArn'] };
      const mappings = Object.values(resourcesOf(template(), 'AWS::Lambda::EventSourceMapping')).filter(
        ({ Properties }) => JSON.stringify(Properties.EventSourceArn) === JSON.stringify(stream),
      );
      const pipes = Object.values(resourcesOf(template(), 'AWS::Pipes::Pipe')).filter(
        ({ Properties }) => JSON.stringify(Properties.Source) === JSON.stringify(stream),
      );
      expect(mappings.length + pipes.length).toBe(2);
      expect(mappings).toHaveLength(1);
      const queueId = idOf('AWS::SQS::Queue', 'FunctionsRealtimePublisherDeadLetters');
      expect(mappings[0]!.Properties).toMatchObject({
        FunctionName: { Ref: publisherId() },
        // A first deploy onto a table with history pushes no old events; a failing batch holds later hints for a minute (Lambda's least), not a day.
        StartingPosition: 'LATEST',
        MaximumRecordAgeInSeconds: 60,
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 10,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queueId, 'Arn'] } } },
        FilterCriteria: { Filters: [{ Pattern: JSON.stringify(BUS_FILTER_PATTERN) }] },
      });
      const alarms = Object.values(resourcesOf(template(), 'AWS::CloudWatch::Alarm')).filter(({ Properties }) =>
        JSON.stringify(Properties.Dimensions ?? []).includes(queueId),
      );
      expect(alarms).toHaveLength(1);
      expect(alarms[0]!.Properties).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    });

    it('may publish to the inbox namespace and do nothing else with AppSync; no other role holds an AppSync action', () => {
      const namespaceId = idOf('AWS::AppSync::ChannelNamespace', 'RealtimeInbox');
      const appsync = statementsOfRole(roleOf(publisherId())).filter((statement) =>
        statement.Action.some((action: string) => action.startsWith('appsync:')),
      );
      expect(appsync).toEqual([
        { Effect: 'Allow', Action: ['appsync:EventPublish'], Resource: { 'Fn::GetAtt': [namespaceId, 'ChannelNamespaceArn'] } },
      ]);
      const others = Object.values(resourcesOf(template(), 'AWS::IAM::Policy'))
        .filter(
          ({ Properties }) =>
            !Properties.Roles.some((role: unknown) => JSON.stringify(role) === JSON.stringify({ Ref: roleOf(publisherId()) })),
        )
        .flatMap(({ Properties }) => Properties.PolicyDocument.Statement)
        .flatMap((statement) => [statement.Action].flat());
      expect(others.filter((action: string) => action.startsWith('appsync:'))).toEqual([]);
    });

    it('and GET /v1/realtime know the Event API: its real-time URL and HTTP domain', () => {
      const apiId = idOf('AWS::AppSync::Api', 'RealtimeEventApi');
      const functions = resourcesOf(template(), 'AWS::Lambda::Function');
      const getRealtime = idOf('AWS::Lambda::Function', `Functions${GetRealtime.name}`);
      for (const id of [publisherId(), getRealtime]) {
        const variables = functions[id]!.Properties.Environment.Variables;
        expect(variables.REALTIME_URL).toEqual({
          'Fn::Join': ['', ['wss://', { 'Fn::GetAtt': [apiId, 'Dns.Realtime'] }, '/event/realtime']],
        });
        expect(variables.REALTIME_HOST).toEqual({ 'Fn::GetAtt': [apiId, 'Dns.Http'] });
      }
    });
  });
}
