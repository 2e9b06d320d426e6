import { App, type AppProps, type Environment, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { MessagingStack } from './stack.js';
import { stackSettings } from './stack-settings.js';

export const STACK_NAME = 'MessagingApi';

/**
 * Behaviour switches of aws-cdk-lib this app relies on, set in code so the
 * CLI (cdk.json) and in-process tests synthesize the same template.
 */
const featureFlags = {
  // Server access logs are delivered under a bucket policy, not the legacy ACL.
  '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy': true,
};

/**
 * The CDK app: the stack, with cdk-nag's AwsSolutions checks on every synth
 * (a finding that is not acknowledged with a reason fails the synth).
 */
export function messagingApp(props: AppProps = {}, env: Environment = {}): { app: App; stack: MessagingStack } {
  const app = new App({ ...props, context: { ...featureFlags, ...props.context } });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const stack = new MessagingStack(app, STACK_NAME, {
    // Only the region, when the CLI knows it: what a region supports is then checked at synth.
    ...(env.region ? { env: { region: env.region } } : {}),
    description: 'Messaging API: API Gateway, Lambda, DynamoDB, S3',
    settings: stackSettings(app.node),
  });
  return { app, stack };
}
