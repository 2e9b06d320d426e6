import { Duration } from 'aws-cdk-lib';
import { AppSyncAuthorizationType, ChannelNamespace, EventApi } from 'aws-cdk-lib/aws-appsync';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { REALTIME_NAMESPACE, REALTIME_PATH } from '../../../shared/realtime/channel.js';
import { BEARER_HEADER_PATTERN } from '../../declarations/gateway-settings.js';
import { realtimePublisherPermissions } from '../../declarations/permissions.js';

export interface RealtimeProps {
  /** The Event API's Lambda authorizer (functions/realtime-authorizer.ts). */
  authorizer: IFunction;
  /** The publisher (functions/realtime-publisher.ts), already fed by the events table's stream. */
  publisher: NodejsFunction;
  /** The functions that must know where the Event API is: GET /v1/realtime and the publisher. */
  told: NodejsFunction[];
  apiName: string;
}

/**
 * The push side of the live inbox on AWS AppSync Events (docs/api.md, "The
 * live inbox"): an Event API whose connections and subscriptions are
 * authorized by our Lambda authorizer (the REST API's token checks, each
 * user to their own channel) and whose only namespace, `inbox`, takes
 * publishes signed with IAM alone, which only the publisher's role may make
 * (appsync:EventPublish on the namespace, infra/declarations/permissions.ts).
 */
export class Realtime extends Construct {
  readonly api: EventApi;
  readonly namespace: ChannelNamespace;
  /** What GET /v1/realtime answers and the publisher posts to. */
  readonly url: string;
  readonly host: string;

  constructor(scope: Construct, id: string, props: RealtimeProps) {
    super(scope, id);
    this.api = new EventApi(this, 'EventApi', {
      apiName: props.apiName,
      authorizationConfig: {
        authProviders: [
          {
            authorizationType: AppSyncAuthorizationType.LAMBDA,
            lambdaAuthorizerConfig: {
              handler: props.authorizer,
              // No cache: AppSync would key it by token alone, and a subscribe answer holds for one channel only.
              resultsCacheTtl: Duration.seconds(0),
              // Only `Bearer <token>` reaches the function, as the REST API's identity validation expression does.
              validationRegex: BEARER_HEADER_PATTERN,
            },
          },
          { authorizationType: AppSyncAuthorizationType.IAM },
        ],
        connectionAuthModeTypes: [AppSyncAuthorizationType.LAMBDA],
        defaultSubscribeAuthModeTypes: [AppSyncAuthorizationType.LAMBDA],
        defaultPublishAuthModeTypes: [AppSyncAuthorizationType.IAM],
      },
      // No Event API logs: CDK's log role carries an AWS managed policy and its retention a custom resource;
      // what can fail is in the authorizer's and the publisher's own logs, and publishes that fail are dead-lettered.
    });
    this.namespace = new ChannelNamespace(this, 'Inbox', {
      api: this.api,
      channelNamespaceName: REALTIME_NAMESPACE,
      authorizationConfig: {
        subscribeAuthModeTypes: [AppSyncAuthorizationType.LAMBDA],
        publishAuthModeTypes: [AppSyncAuthorizationType.IAM],
      },
    });
    this.url = `wss://${this.api.realtimeDns}${REALTIME_PATH}`;
    this.host = this.api.httpDns;
    for (const fn of props.told) {
      fn.addEnvironment('REALTIME_URL', this.url);
      fn.addEnvironment('REALTIME_HOST', this.host);
    }
    for (const permission of realtimePublisherPermissions(this.namespace.channelNamespaceArn))
      props.publisher.addToRolePolicy(new PolicyStatement(permission));
  }
}
