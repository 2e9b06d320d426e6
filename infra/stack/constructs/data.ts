import { Duration, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, StreamViewType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { BlockPublicAccess, Bucket, BucketEncryption, HttpMethods } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import {
  attachmentsTable,
  conversationsTable,
  eventsTable,
  idempotencyTable,
  type TableDefinition,
  uploadSessionsTable,
} from '../../../shared/dynamo/tables.js';
import { filesBucketCors } from '../../../shared/http/cors.js';
import { removalPolicyFor } from './removal-policy.js';

export interface DataProps {
  ephemeral: boolean;
  corsOrigins: string[];
  /** Incomplete multipart uploads are aborted the first whole day after a session can no longer use them. */
  uploadSessionTtlSeconds: number;
}

/**
 * The tables exactly as the code queries them (declared from
 * shared/dynamo/tables.ts, never restated) and the files bucket.
 * Kept on stack deletion unless the stack is ephemeral.
 */
export class Data extends Construct {
  readonly conversations: Table;
  readonly attachments: Table;
  readonly idempotency: Table;
  readonly uploadSessions: Table;
  readonly events: Table;
  readonly files: Bucket;

  constructor(scope: Construct, id: string, props: DataProps) {
    super(scope, id);
    const removalPolicy = removalPolicyFor(props.ephemeral);

    this.conversations = table(this, 'Conversations', conversationsTable, props.ephemeral);
    this.attachments = table(this, 'Attachments', attachmentsTable, props.ephemeral);
    this.idempotency = table(this, 'Idempotency', idempotencyTable, props.ephemeral);
    this.uploadSessions = table(this, 'UploadSessions', uploadSessionsTable, props.ephemeral);
    this.events = table(this, 'Events', eventsTable, props.ephemeral);

    const accessLogs = new Bucket(this, 'AccessLogs', {
      ...privateBucket,
      lifecycleRules: [{ expiration: Duration.days(90) }, abortIncompleteUploads],
      removalPolicy,
      autoDeleteObjects: props.ephemeral,
    });
    Validations.of(accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the server access log bucket of the files bucket; logging it would log its own log deliveries.',
    });

    this.files = new Bucket(this, 'Files', {
      ...privateBucket,
      // Deleting an attachment deletes its file for good (docs/api.md): no versions linger.
      versioned: false,
      lifecycleRules: [
        // S3 counts whole days (to the next midnight UTC): an abandoned session's parts are gone a day after it expires at most.
        { abortIncompleteMultipartUploadAfter: Duration.days(Math.ceil(props.uploadSessionTtlSeconds / 86_400)) },
        // Only acts if versioning is ever turned on: old versions of deleted files do not pile up.
        { noncurrentVersionExpiration: Duration.days(7) },
      ],
      // Browsers may fetch file_url (a presigned GET) and PUT upload parts from these origins; the local S3 stand-in gets the same rule.
      ...(props.corsOrigins.length > 0 ? { cors: [bucketCorsRule(props.corsOrigins)] } : {}),
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'files/',
      removalPolicy,
      autoDeleteObjects: props.ephemeral,
    });
  }
}

const privateBucket = {
  blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
  enforceSSL: true,
  minimumTLSVersion: 1.2,
  encryption: BucketEncryption.S3_MANAGED,
} as const;

const abortIncompleteUploads = { abortIncompleteMultipartUploadAfter: Duration.days(1) };

/** A table from its definition: every key and index key is a string, every index projects ALL. */
function table(scope: Construct, id: string, definition: TableDefinition, ephemeral: boolean): Table {
  const string = (name: string) => ({ name, type: AttributeType.STRING });
  const created = new Table(scope, id, {
    partitionKey: string(definition.partitionKey),
    sortKey: string(definition.sortKey),
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: TableEncryption.AWS_MANAGED,
    ...(definition.timeToLiveAttribute ? { timeToLiveAttribute: definition.timeToLiveAttribute } : {}),
    ...(definition.stream ? { stream: StreamViewType[definition.stream] } : {}),
    deletionProtection: !ephemeral,
    removalPolicy: removalPolicyFor(ephemeral),
  });
  for (const index of definition.indexes) {
    created.addGlobalSecondaryIndex({
      indexName: index.name,
      partitionKey: string(index.partitionKey),
      sortKey: string(index.sortKey),
      // ProjectionType ALL is the default: a filtered list reads whole conversations from the index.
    });
  }
  for (const index of definition.localIndexes ?? []) {
    // ALL again: a filtered feed serves whole events from the index, with no read of the table.
    created.addLocalSecondaryIndex({ indexName: index.name, sortKey: string(index.sortKey) });
  }
  return created;
}

function bucketCorsRule(origins: readonly string[]) {
  const rule = filesBucketCors(origins);
  return {
    allowedMethods: rule.allowedMethods.map((method) => HttpMethods[method]),
    allowedOrigins: rule.allowedOrigins,
    allowedHeaders: [...rule.allowedHeaders],
    exposedHeaders: rule.exposedHeaders,
    maxAge: rule.maxAgeSeconds,
  };
}
