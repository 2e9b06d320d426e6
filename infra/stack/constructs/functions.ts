import { join } from 'node:path';
import { Duration, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { type IRole, PolicyStatement, type PolicyStatementProps, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, type FunctionOptions, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { type BundlingOptions, LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { CfnBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { REMOVALS_FILTER_PATTERN } from '../../../shared/cleanup/stream-events.js';
import { tableVariables } from '../../../shared/config.js';
import { CHANGES_FILTER_PATTERN } from '../../../shared/conversations/fan-out.js';
import { SETTLING_BATCH_SIZE, SETTLING_TIMEOUT_SECONDS } from '../../../shared/conversations/settling-timers.js';
import { BUS_FILTER_PATTERN } from '../../../shared/events/bus.js';
import { FILES_PREFIX, PREVIEWS_PREFIX } from '../../../shared/files/keys.js';
import { PREVIEW_BATCH_SIZE, PREVIEW_TIMEOUT_SECONDS } from '../../../shared/previews/delivery.js';
import { type Route, routes } from '../../../shared/routes.js';
import { SCAN_TIMER_BATCH_SIZE, SCAN_TIMER_TIMEOUT_SECONDS } from '../../../shared/scanning/timers.js';
import {
  authorizerFunction,
  CONSUMER_STREAM_READING,
  CONSUMER_TIMEOUT_SECONDS,
  cleanupFunction,
  eventDetailFunction,
  FUNCTION_SETTINGS,
  FUNCTION_TIMEOUT_SECONDS,
  fanOutFunction,
  largeThreadSettlingFunction,
  PREVIEW_MEMORY_MB,
  previewFunction,
  REALTIME_PUBLISHER_STREAM_READING,
  realtimeAuthorizerFunction,
  realtimePublisherFunction,
  SCAN_RECORDER_RETRIES,
  type StackFunction,
  scanRecorderFunction,
  scanTimeoutFunction,
} from '../../declarations/function-settings.js';
import {
  cleanupPermissions,
  dataArnsOf,
  fanOutPermissions,
  largeThreadSettlingPermissions,
  permissionsFor,
  previewWorkerPermissions,
  scanRecorderPermissions,
  scanTimeoutPermissions,
} from '../../declarations/permissions.js';
import { REPOSITORY_ROOT } from '../../declarations/repository.js';
import { bundleLayout, bundleSettings, installSharp, type SharpTarget, writeFilesCommand } from '../bundling.js';
import { secretsExtensionLayer } from '../secrets-extension.js';
import type { AuthSettings, StackSettings } from '../stack-settings.js';
import type { Data } from './data.js';
import { previewQueue } from './previews.js';
import { removalPolicyFor } from './removal-policy.js';
import { Scanning } from './scanning.js';
import { StreamConsumer, type StreamFeed } from './stream-consumer.js';
import { threadSettlingQueue } from './thread-settling.js';

/** Node.js 24; infra/stack/bundling.ts targets the same Node version. */
export const LAMBDA_RUNTIME = Runtime.NODEJS_24_X;

type LambdaExtra = Pick<FunctionOptions, 'paramsAndSecrets' | 'timeout' | 'memorySize' | 'deadLetterQueue' | 'retryAttempts'>;

/** What a stream consumer's function has of its own: its environment, its grants, its timeout. */
interface ConsumerOwn {
  environment?: Record<string, string>;
  permissions?: PolicyStatementProps[];
  extra?: LambdaExtra;
}

/** The settings' architecture (Graviton's arm64 by default), as CDK names it. */
const lambdaArchitecture = (architecture: StackSettings['architecture']) =>
  Architecture.ARM_64.name === architecture ? Architecture.ARM_64 : Architecture.X86_64;

export interface FunctionsProps {
  data: Data;
  settings: StackSettings;
  /** The HS256 secret, when the stack signs its own tokens. */
  authSecret?: ISecret;
}

/**
 * One function per row of the route table, plus the authorizer. Each has its
 * own role holding exactly what its route's `access` declares.
 */
export class Functions extends Construct {
  readonly byRoute = new Map<Route, NodejsFunction>();
  readonly authorizer: NodejsFunction;
  readonly cleanup: StreamConsumer;
  readonly fanOut: StreamConsumer;
  /** The events pipe's enrichment (operator-events.ts): reads nothing, writes nothing, only its logs. */
  readonly eventDetail: NodejsFunction;
  /** The Event API's Lambda authorizer (realtime.ts): the REST authorizer's settings and secret, no other access. */
  readonly realtimeAuthorizer: NodejsFunction;
  /** A hint per new event to its user's channel, from the events table's stream. */
  readonly realtimePublisher: StreamConsumer;
  /** The preview worker, fed by the previews queue, which the fan-out fills. */
  readonly previews: NodejsFunction;
  readonly previewRequests: Queue;
  /** Preview requests that failed every delivery; the alarm fires on the first. */
  readonly previewDeadLetters: Queue;
  readonly previewAlarm: Alarm;
  /** A large thread's settling sweep, fed by the settling timers' queue, which the fan-out fills as a thread becomes large. */
  readonly threadSettling: NodejsFunction;
  readonly threadSettlingQueue: Queue;
  /** Settling timers that failed every delivery; the alarm fires on the first. */
  readonly threadSettlingDeadLetters: Queue;
  readonly threadSettlingAlarm: Alarm;
  private readonly architecture: StackSettings['architecture'];
  /** GuardDuty's plan, its role and rule, and the recorder of its results; absent where the deployment turns scanning off. */
  readonly scanning?: Scanning;
  readonly scanRecorder?: NodejsFunction;
  readonly scanTimeouts?: NodejsFunction;

  constructor(scope: Construct, id: string, props: FunctionsProps) {
    super(scope, id);
    const { data, settings } = props;
    this.architecture = settings.architecture;
    // First, so that a region without the layer stops the synth before anything is bundled.
    const secretsExtension =
      props.authSecret && !settings.samLocal ? secretsExtensionLayer(Stack.of(this).region, settings.architecture) : undefined;
    const removalPolicy = removalPolicyFor(settings.ephemeral);

    const environment = {
      ...tableVariables((role) => data[role].tableName),
      FILES_BUCKET: data.files.bucketName,
      MAX_FILE_BYTES: String(settings.maxFileBytes),
      FILE_URL_TTL_SECONDS: String(settings.fileUrlTtlSeconds),
      MAX_UPLOAD_BYTES: String(settings.maxUploadBytes),
      UPLOAD_SESSION_TTL_SECONDS: String(settings.uploadSessionTtlSeconds),
      CORS_ORIGINS: settings.corsOrigins.join(','),
      SCANNING: settings.scanning ? 'on' : 'off',
      SCAN_UNSCANNABLE: settings.scanUnscannable,
      SCAN_TIMEOUT_SECONDS: String(settings.scanTimeoutSeconds),
      // Empty on AWS. `sam local --env-vars` only overrides variables the template declares,
      // so these are declared for it to point the functions at npm start's DynamoDB and S3.
      DYNAMODB_ENDPOINT: '',
      S3_ENDPOINT: '',
    };
    const arns = dataArnsOf((role) => data[role].tableArn, data.files.bucketArn);
    const previews = previewQueue(this, removalPolicy);
    this.previewRequests = previews.queue;
    this.previewDeadLetters = previews.deadLetters;
    this.previewAlarm = previews.alarm;
    const settling = threadSettlingQueue(this, removalPolicy);
    this.threadSettlingQueue = settling.queue;
    this.threadSettlingDeadLetters = settling.deadLetters;
    this.threadSettlingAlarm = settling.alarm;

    for (const route of routes) {
      const fn = this.lambda(route.name, route.entry, environment, removalPolicy);
      this.grant(fn, permissionsFor(route, arns));
      if (route.access.files?.length) this.acknowledgeFilesPrefix(fn, data);
      if (route.access.files?.includes('get')) this.acknowledgeThumbnailKeys(fn, data);
      this.byRoute.set(route, fn);
    }

    // A consumer's role is granted before its mappings add the stream and dead-letter grants.
    const consumer = (declared: StackFunction, feed: Omit<StreamFeed, 'removalPolicy'>, own: ConsumerOwn = {}) => {
      const fn = this.lambda(declared.name, declared.entry, own.environment ?? {}, removalPolicy, own.extra);
      this.grant(fn, own.permissions ?? []);
      return new StreamConsumer(this, declared.name, fn, { ...feed, removalPolicy });
    };
    const consumerTimeout = { timeout: Duration.seconds(CONSUMER_TIMEOUT_SECONDS) };

    // What hangs off removed items (a conversation's attachments, every file, an upload session's leftovers).
    this.cleanup = consumer(
      cleanupFunction,
      {
        tables: [data.conversations, data.attachments, data.uploadSessions],
        filter: REMOVALS_FILTER_PATTERN,
        reading: CONSUMER_STREAM_READING,
        leftUndone: 'attachments or files of deleted items are left',
      },
      { environment, permissions: cleanupPermissions(arns), extra: consumerTimeout },
    );
    this.acknowledgeFilesPrefix(this.cleanup.fn, data);
    this.acknowledgeThumbnailKeys(this.cleanup.fn, data);

    // GuardDuty's plan, its rule and the scan timers' queue, which the fan-out fills; absent where scanning is off.
    const scanning = settings.scanning ? new Scanning(this, 'Scanning', { bucket: data.files, removalPolicy }) : undefined;
    this.scanning = scanning;

    // Attachment changes (uploads, renames, removals) reaching the other members of their thread: events, activity, a contact's new side.
    this.fanOut = consumer(
      fanOutFunction,
      {
        tables: [data.attachments],
        filter: CHANGES_FILTER_PATTERN,
        reading: CONSUMER_STREAM_READING,
        leftUndone: "attachment changes missed the other members' feeds",
      },
      {
        environment: {
          ...environment,
          PREVIEW_QUEUE_URL: previews.queue.queueUrl,
          LARGE_GROUP_SIDES: String(settings.largeGroupSides),
          THREAD_SETTLING_QUEUE_URL: settling.queue.queueUrl,
          ...(scanning ? { SCAN_TIMER_QUEUE_URL: scanning.timers.queueUrl } : {}),
        },
        permissions: fanOutPermissions(arns, previews.queue.queueArn, settling.queue.queueArn, scanning?.timers.queueArn),
        extra: consumerTimeout,
      },
    );

    // Previews of new images, from the queue the fan-out fills; sharp's native binary for the functions' architecture rides in the asset.
    // Each request on its own: it holds an image in memory.
    this.previews = this.queueFed(previewFunction, previews.queue, {
      batchSize: PREVIEW_BATCH_SIZE,
      permissions: previewWorkerPermissions(arns),
      environment: { ...environment, PREVIEW_MAX_BYTES: String(settings.previewMaxBytes) },
      removalPolicy,
      extra: { timeout: Duration.seconds(PREVIEW_TIMEOUT_SECONDS), memorySize: PREVIEW_MEMORY_MB },
      bundling: withSharp({ architecture: settings.architecture, offline: settings.offlineBundling }),
    });
    this.acknowledgeFilesPrefix(this.previews, data);
    this.acknowledgeThumbnailKeys(this.previews, data);

    // A large thread's sides the switch's sweep missed, from the settling timers' queue.
    this.threadSettling = this.queueFed(largeThreadSettlingFunction, settling.queue, {
      batchSize: SETTLING_BATCH_SIZE,
      permissions: largeThreadSettlingPermissions(arns),
      environment,
      removalPolicy,
      extra: { timeout: Duration.seconds(SETTLING_TIMEOUT_SECONDS) },
    });

    // GuardDuty's results, recorded on the records; Lambda retries a failed event twice, then dead-letters it.
    if (scanning) {
      this.scanRecorder = this.lambda(scanRecorderFunction.name, scanRecorderFunction.entry, environment, removalPolicy, {
        timeout: Duration.seconds(CONSUMER_TIMEOUT_SECONDS),
        deadLetterQueue: scanning.deadLetters,
        retryAttempts: SCAN_RECORDER_RETRIES,
      });
      this.grant(this.scanRecorder, scanRecorderPermissions(arns));
      Validations.of(roleOf(this.scanRecorder)).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'guardduty:SendObjectMalwareScan has no resource type (IAM authorises it on *); X-Ray as every function.',
      });
      scanning.recordWith(this.scanRecorder);
      // Files with no result when their timer comes, from the timers' queue.
      this.scanTimeouts = this.queueFed(scanTimeoutFunction, scanning.timers, {
        batchSize: SCAN_TIMER_BATCH_SIZE,
        permissions: scanTimeoutPermissions(arns),
        environment,
        removalPolicy,
        extra: { timeout: Duration.seconds(SCAN_TIMER_TIMEOUT_SECONDS) },
      });
    }

    this.eventDetail = this.lambda(eventDetailFunction.name, eventDetailFunction.entry, {}, removalPolicy);

    // Pushes: the events table's stream has two readers, the operators' pipe and this mapping, which is all
    // DynamoDB advises per shard; a third consumer of the events must read the bus instead. New event items only,
    // the pipe's own filter; its publish grant comes with the Event API (realtime.ts).
    this.realtimePublisher = consumer(realtimePublisherFunction, {
      tables: [data.events],
      filter: BUS_FILTER_PATTERN,
      reading: REALTIME_PUBLISHER_STREAM_READING,
      leftUndone: 'connected clients missed hints (feeds are whole)',
    });

    // Both authorizers read the signing secret through the extension, with their own role, without an SDK in the bundle.
    const tokenAuthorizer = ({ name, entry }: StackFunction) => {
      const authorizer = this.lambda(name, entry, authorizerEnvironment(settings.auth, props.authSecret), removalPolicy, {
        paramsAndSecrets: secretsExtension,
      });
      props.authSecret?.grantRead(authorizer);
      return authorizer;
    };
    this.authorizer = tokenAuthorizer(authorizerFunction);
    this.realtimeAuthorizer = tokenAuthorizer(realtimeAuthorizerFunction);

    // Applies to every function's role below this construct.
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'Active X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions.',
    });
  }

  /** A function fed by `queue`, `batchSize` messages at a time; a message it fails alone is delivered again. */
  private queueFed(
    declared: StackFunction,
    queue: Queue,
    props: {
      batchSize: number;
      permissions: PolicyStatementProps[];
      environment: Record<string, string>;
      removalPolicy: RemovalPolicy;
      extra?: LambdaExtra;
      bundling?: BundlingOptions;
    },
  ): NodejsFunction {
    const fn = this.lambda(declared.name, declared.entry, props.environment, props.removalPolicy, props.extra, props.bundling);
    this.grant(fn, props.permissions);
    fn.addEventSource(new SqsEventSource(queue, { batchSize: props.batchSize, reportBatchItemFailures: true }));
    return fn;
  }

  private grant(fn: NodejsFunction, permissions: PolicyStatementProps[]): void {
    for (const permission of permissions) fn.addToRolePolicy(new PolicyStatement(permission));
  }

  /** cdk-nag's finding on a grant under the files/ prefix, answered once for every role that holds one. */
  private acknowledgeFilesPrefix(fn: NodejsFunction, data: Data): void {
    const filesBucketId = Stack.of(this).getLogicalId(data.files.node.defaultChild as CfnBucket);
    Validations.of(roleOf(fn)).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${filesBucketId}.Arn>/${FILES_PREFIX}*]`,
      reason: 'Object keys are minted per user and attachment at run time; the files/ prefix is the narrowest fixed scope.',
    });
  }

  /** cdk-nag's finding on the thumbnails' prefix, for a role that reads or writes thumbnails. */
  private acknowledgeThumbnailKeys(fn: NodejsFunction, data: Data): void {
    const filesBucketId = Stack.of(this).getLogicalId(data.files.node.defaultChild as CfnBucket);
    Validations.of(roleOf(fn)).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${filesBucketId}.Arn>/${PREVIEWS_PREFIX}*]`,
      reason: "Thumbnail keys derive from their file's key, minted at run time; the previews/ prefix is the narrowest fixed scope.",
    });
  }

  private lambda(
    name: string,
    entry: string,
    environment: Record<string, string>,
    removalPolicy: RemovalPolicy,
    extra: LambdaExtra = {},
    bundling: BundlingOptions = nodejsBundling,
  ): NodejsFunction {
    const logGroup = new LogGroup(this, `${name}Logs`, { retention: RetentionDays.ONE_MONTH, removalPolicy });
    // An own role without the AWS managed basic-execution policy: logs go to this function's group only.
    const role = new Role(this, `${name}Role`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    return new NodejsFunction(this, name, {
      entry: join(REPOSITORY_ROOT, entry),
      handler: 'handler',
      projectRoot: REPOSITORY_ROOT,
      depsLockFilePath: join(REPOSITORY_ROOT, 'package-lock.json'),
      runtime: LAMBDA_RUNTIME,
      architecture: lambdaArchitecture(this.architecture),
      memorySize: FUNCTION_SETTINGS.memoryMb,
      // Under API Gateway's 29 s integration timeout, unless `extra` says otherwise (the stream consumers); each
      // invocation's backend calls end before it (shared/deadline.ts).
      timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS),
      tracing: Tracing.ACTIVE,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      role,
      environment: { ...environment, NODE_OPTIONS: '--enable-source-maps' },
      bundling,
      ...extra,
    });
  }
}

/** How the authorizer verifies tokens (shared/auth/verifier-settings.ts reads these). */
function authorizerEnvironment(auth: AuthSettings, secret: ISecret | undefined): Record<string, string> {
  const claims = { AUTH_ISSUER: auth.issuer ?? '', AUTH_AUDIENCE: auth.audience ?? '', GROUPS_CLAIM: auth.groupsClaim };
  if (auth.mode === 'jwks') return { AUTH_JWKS_URL: auth.jwksUrl, ...claims };
  if (!secret) throw new Error('HS256 mode needs the stack secret');
  // AUTH_SECRET is empty on AWS (the key is read from AUTH_SECRET_ARN); sam local's env-vars file sets it.
  return { AUTH_SECRET_ARN: secret.secretArn, AUTH_SECRET: '', ...claims };
}

/** infra/stack/bundling.ts in NodejsFunction's terms, built by the local esbuild (no Docker). */
const nodejsBundling: BundlingOptions = {
  format: bundleSettings.format === 'esm' ? OutputFormat.ESM : OutputFormat.CJS,
  target: bundleSettings.target,
  minify: bundleSettings.minify,
  sourceMap: bundleSettings.sourcemap,
  mainFields: bundleSettings.mainFields,
  banner: bundleSettings.banner,
  externalModules: bundleSettings.external,
  // esbuild's per-bundle size summary; warnings and errors still print.
  logLevel: LogLevel.WARNING,
  bundleAwsSDK: true,
  forceDockerBundling: false,
  commandHooks: {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) => renameToLayout(outputDir),
  },
};

/** The preview worker's bundling: sharp for the functions' architecture installed beside the bundle (infra/stack/bundling.ts). */
const withSharp = (target: SharpTarget): BundlingOptions => ({
  ...nodejsBundling,
  commandHooks: {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) => [...renameToLayout(outputDir), ...installSharp(outputDir, target)],
  },
});

/**
 * CDK writes an ESM bundle as index.mjs; lay it out as infra/stack/bundling.ts says
 * (index.js beside a module package.json). The source map keeps its name, which
 * the bundle's sourceMappingURL comment still points at. Plain node, so the
 * hook runs wherever the local esbuild does.
 */
function renameToLayout(outputDir: string): string[] {
  const script = `const path = require('path'); require('fs').renameSync(path.join(process.argv[1], 'index.mjs'), path.join(process.argv[1], '${bundleLayout.file}'))`;
  return [`node -e "${script}" "${outputDir}"`, writeFilesCommand(outputDir, { 'package.json': bundleLayout.packageJson })];
}

/** A function's own role, which lambda() always gives it. */
function roleOf(fn: NodejsFunction): IRole {
  if (!fn.role) throw new Error(`${fn.node.path} has no role`);
  return fn.role;
}
