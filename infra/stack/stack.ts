import { CfnOutput, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { GetRealtime } from '../../shared/routes.js';
import { Api } from './constructs/api.js';
import { Data } from './constructs/data.js';
import { Functions } from './constructs/functions.js';
import { OperatorEvents } from './constructs/operator-events.js';
import { Realtime } from './constructs/realtime.js';
import { removalPolicyFor } from './constructs/removal-policy.js';
import type { StackSettings } from './stack-settings.js';

export interface MessagingStackProps extends StackProps {
  settings: StackSettings;
}

/**
 * The messaging API on AWS: the same route table, handlers and table
 * definitions that `npm start` serves locally. Environment-agnostic (no
 * lookups), so it synthesizes offline without credentials.
 */
export class MessagingStack extends Stack {
  readonly data: Data;
  readonly functions: Functions;
  readonly api: Api;
  readonly operatorEvents: OperatorEvents;
  readonly realtime: Realtime;

  constructor(scope: Construct, id: string, props: MessagingStackProps) {
    super(scope, id, props);
    const { settings } = props;

    this.data = new Data(this, 'Data', {
      ephemeral: settings.ephemeral,
      corsOrigins: settings.corsOrigins,
      uploadSessionTtlSeconds: settings.uploadSessionTtlSeconds,
    });

    const authSecret =
      settings.auth.mode === 'secret'
        ? new Secret(this, 'AuthSecret', {
            description: 'HS256 key that signs and verifies the API access tokens',
            generateSecretString: { passwordLength: 64, excludePunctuation: true },
            removalPolicy: removalPolicyFor(settings.ephemeral),
          })
        : undefined;
    if (authSecret) {
      Validations.of(authSecret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'A shared HS256 signing key: rotating it invalidates every token issued with it, so rotation is a coordinated manual step with the token issuer (docs/deploying.md), not a schedule.',
      });
    }

    this.functions = new Functions(this, 'Functions', { data: this.data, settings, ...(authSecret ? { authSecret } : {}) });
    this.api = new Api(this, 'Api', { settings, handlers: this.functions.byRoute, authorizer: this.functions.authorizer });
    this.operatorEvents = new OperatorEvents(this, 'OperatorEvents', {
      events: this.data.events,
      detail: this.functions.eventDetail,
      removalPolicy: removalPolicyFor(settings.ephemeral),
    });

    const realtimeReader = this.functions.byRoute.get(GetRealtime);
    if (!realtimeReader) throw new Error('no function serves GET /v1/realtime, whose role the realtime namespace must tell');
    this.realtime = new Realtime(this, 'Realtime', {
      apiName: `${this.stackName}-inbox`,
      authorizer: this.functions.realtimeAuthorizer,
      publisher: this.functions.realtimePublisher.fn,
      told: [realtimeReader, this.functions.realtimePublisher.fn],
    });

    const output = (id: string, value: string, description: string) => new CfnOutput(this, id, { value, description });
    output('ApiUrl', `${this.api.restApi.url}v1`, 'Base URL of the API (append /conversations, /attachments)');
    output('ConversationsTableName', this.data.conversations.tableName, 'DynamoDB table of conversations');
    output('AttachmentsTableName', this.data.attachments.tableName, 'DynamoDB table of attachment records');
    output('IdempotencyTableName', this.data.idempotency.tableName, 'DynamoDB table of Idempotency-Key records');
    output('FilesBucketName', this.data.files.bucketName, 'S3 bucket of attachment files');
    output('EventBusName', this.operatorEvents.bus.eventBusName, "EventBridge bus of every user's events (source messaging-api)");
    output('RealtimeUrl', this.realtime.url, "AppSync Events real-time endpoint (GET /v1/realtime answers it with the user's channel)");
    output(
      'RealtimeHost',
      this.realtime.host,
      "AppSync Events HTTP domain (the host of a connection's authorization; the publisher posts here)",
    );
    if (authSecret) output('AuthSecretArn', authSecret.secretArn, 'Secrets Manager secret holding the HS256 token key');
  }
}
