import { describe, expect, it } from 'vitest';
import {
  cleanupPermissions,
  type DataArns,
  fanOutPermissions,
  largeThreadSettlingPermissions,
  MALWARE_PROTECTION_PRINCIPAL,
  malwareProtectionPlanPermissions,
  permissionsFor,
  previewWorkerPermissions,
  scanRecorderPermissions,
} from '../../../../infra/declarations/permissions.js';
import {
  attachmentsTable,
  conversationsTable,
  eventsTable,
  idempotencyTable,
  uploadSessionsTable,
} from '../../../../shared/dynamo/tables.js';
import { FEED_APPEND } from '../../../../shared/routes.js';

const arns: DataArns = {
  conversations: { arn: 'arn:conversations', definition: conversationsTable },
  attachments: { arn: 'arn:attachments', definition: attachmentsTable },
  idempotency: { arn: 'arn:idempotency', definition: idempotencyTable },
  uploadSessions: { arn: 'arn:upload-sessions', definition: uploadSessionsTable },
  events: { arn: 'arn:events', definition: eventsTable },
  filesBucket: 'arn:aws:s3:::files-bucket',
};

describe('permissions from a route access declaration', () => {
  it('lets a reader get items of the table, and no index: item calls are authorised on the table only', () => {
    expect(permissionsFor({ access: { conversations: ['get'] } }, arns)).toEqual([
      { actions: ['dynamodb:GetItem'], resources: ['arn:conversations'] },
    ]);
  });

  it('lets a route query exactly the tables and indexes it declares, by name, and refuses an index the table has not', () => {
    expect(permissionsFor({ access: { queries: ['events', 'events/by_type'] } }, arns)).toEqual([
      { actions: ['dynamodb:Query'], resources: ['arn:events', 'arn:events/index/by_type'] },
    ]);
    expect(() => permissionsFor({ access: { queries: ['attachments/by_type'] } }, arns)).toThrow(
      'no index by_type on the attachments table',
    );
  });

  it('grants each item call a route declares as its action, once, and no other: a creator neither updates nor deletes', () => {
    expect(permissionsFor({ access: { conversations: ['get', 'put', 'get'] } }, arns)).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], resources: ['arn:conversations'] },
    ]);
    expect(permissionsFor({ access: { uploadSessions: ['delete'], attachments: ['update'] } }, arns)).toEqual([
      { actions: ['dynamodb:UpdateItem'], resources: ['arn:attachments'] },
      { actions: ['dynamodb:DeleteItem'], resources: ['arn:upload-sessions'] },
    ]);
    expect(permissionsFor({ access: { attachments: [] } }, arns)).toEqual([]);
  });

  it("grants a transaction's ConditionCheck as ConditionCheckItem, and a feed's append as its head read and moved and its events put", () => {
    expect(permissionsFor({ access: { conversations: ['get', 'update', 'check'], events: FEED_APPEND } }, arns)).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'], resources: ['arn:conversations'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'], resources: ['arn:events'] },
    ]);
  });

  it('gives idempotent routes their key records (read, claimed and completed by update, released; never put whole) and others none', () => {
    const withKeys = permissionsFor({ access: { conversations: ['put'] }, idempotent: true }, arns);
    expect(withKeys.map((p) => p.resources[0])).toEqual(['arn:conversations', 'arn:idempotency']);
    // Claimed and completed with conditional updates (shared/idempotency/dynamo-store.ts).
    expect(withKeys[1]!.actions).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']);
    expect(permissionsFor({ access: { conversations: ['put'] } }, arns).map((p) => p.resources[0])).toEqual(['arn:conversations']);
  });

  it('scopes object actions to the files prefix, one action per declared need, and lets a reader of files read their thumbnails', () => {
    expect(permissionsFor({ access: { files: ['put', 'get', 'put'] } }, arns)).toEqual([
      { actions: ['s3:PutObject', 's3:GetObject'], resources: ['arn:aws:s3:::files-bucket/files/*'] },
      { actions: ['s3:GetObject'], resources: ['arn:aws:s3:::files-bucket/previews/*'] },
    ]);
    expect(permissionsFor({ access: { files: ['put'] } }, arns)).toEqual([
      { actions: ['s3:PutObject'], resources: ['arn:aws:s3:::files-bucket/files/*'] },
    ]);
    expect(permissionsFor({ access: { files: [] } }, arns)).toEqual([]);
  });

  it("grants 'list' as s3:ListBucket on the bucket, limited to keys under the files prefix, apart from the object actions", () => {
    expect(permissionsFor({ access: { files: ['get', 'list'] } }, arns)).toEqual([
      { actions: ['s3:GetObject'], resources: ['arn:aws:s3:::files-bucket/files/*'] },
      { actions: ['s3:GetObject'], resources: ['arn:aws:s3:::files-bucket/previews/*'] },
      { actions: ['s3:ListBucket'], resources: ['arn:aws:s3:::files-bucket'], conditions: { StringLike: { 's3:prefix': 'files/*' } } },
    ]);
    expect(permissionsFor({ access: { files: ['list'] } }, arns)).toHaveLength(1);
  });
});

describe('the fan-out', () => {
  it("reads, updates, puts and checks (a side already at the upload's time) conversations, queries only the index of a thread's sides, appends to feeds, batch-reads the delivered changes, queues previews, settling and scan timers, settles a scan result kept for a new record, and touches nothing else", () => {
    expect(fanOutPermissions(arns, 'arn:previews-queue', 'arn:thread-settling', 'arn:scan-timers')).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'], resources: ['arn:attachments'] },
      {
        actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:ConditionCheckItem'],
        resources: ['arn:conversations'],
      },
      { actions: ['dynamodb:Query'], resources: ['arn:conversations/index/by_thread'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'], resources: ['arn:events'] },
      { actions: ['dynamodb:BatchGetItem'], resources: ['arn:events'] },
      { actions: ['sqs:SendMessage'], resources: ['arn:previews-queue'] },
      { actions: ['sqs:SendMessage'], resources: ['arn:thread-settling'] },
      { actions: ['sqs:SendMessage'], resources: ['arn:scan-timers'] },
    ]);
    // Where scanning is off there is no timers' queue to send to.
    expect(
      fanOutPermissions(arns, 'arn:previews-queue', 'arn:thread-settling').flatMap((permission) => permission.resources),
    ).not.toContain('arn:scan-timers');
    // The index it names is one the conversations table declares, keyed by thread.
    expect(conversationsTable.indexes).toContainEqual(expect.objectContaining({ name: 'by_thread', partitionKey: 'thread_key' }));
  });
});

describe('the settling sweep', () => {
  it('reads, updates and checks conversations, queries only the index of a thread’s sides, appends to feeds and batch-reads the passed-over and delivered changes, nothing else', () => {
    expect(largeThreadSettlingPermissions(arns)).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'], resources: ['arn:conversations'] },
      { actions: ['dynamodb:Query'], resources: ['arn:conversations/index/by_thread'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:BatchGetItem'], resources: ['arn:events'] },
    ]);
  });
});

describe('the cleanup', () => {
  it("queries the attachments' by_conversation index (a Query on an index needs the index's ARN), removes records one at a time with their events, deletes files", () => {
    expect(cleanupPermissions(arns)).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:DeleteItem'], resources: ['arn:attachments'] },
      { actions: ['dynamodb:Query'], resources: ['arn:attachments/index/by_conversation'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'], resources: ['arn:events'] },
      { actions: ['s3:DeleteObject', 's3:AbortMultipartUpload'], resources: ['arn:aws:s3:::files-bucket/files/*'] },
      { actions: ['s3:DeleteObject'], resources: ['arn:aws:s3:::files-bucket/previews/*'] },
    ]);
    expect(attachmentsTable.indexes).toContainEqual(expect.objectContaining({ name: 'by_conversation' }));
  });
});

describe('the preview worker', () => {
  it('reads and updates attachment records, appends to feeds, reads files, and writes and removes only thumbnails', () => {
    expect(previewWorkerPermissions(arns)).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], resources: ['arn:attachments'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'], resources: ['arn:events'] },
      { actions: ['s3:GetObject'], resources: ['arn:aws:s3:::files-bucket/files/*'] },
      { actions: ['s3:PutObject', 's3:DeleteObject'], resources: ['arn:aws:s3:::files-bucket/previews/*'] },
    ]);
  });
});

describe('the scan recorder', () => {
  it('keeps, reads, settles and removes scan results on the attachments table, appends to feeds, asks for a new scan (an action of no resource type), and touches no file', () => {
    expect(scanRecorderPermissions(arns)).toEqual([
      { actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'], resources: ['arn:attachments'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'], resources: ['arn:events'] },
      { actions: ['guardduty:SendObjectMalwareScan'], resources: ['*'] },
    ]);
  });
});

describe("the malware protection plan's role", () => {
  it("holds exactly the statements of AWS's documented policy, over this bucket and account", () => {
    const bucket = 'arn:aws:s3:::files-bucket';
    const rule = 'arn:aws:events:us-east-1:111122223333:rule/DO-NOT-DELETE-AmazonGuardDutyMalwareProtectionS3*';
    expect(malwareProtectionPlanPermissions(bucket, rule, '111122223333')).toEqual([
      {
        actions: ['events:PutRule', 'events:DeleteRule', 'events:PutTargets', 'events:RemoveTargets'],
        resources: [rule],
        conditions: { StringLike: { 'events:ManagedBy': MALWARE_PROTECTION_PRINCIPAL } },
      },
      { actions: ['events:DescribeRule', 'events:ListTargetsByRule'], resources: [rule] },
      {
        actions: ['s3:PutObjectTagging', 's3:GetObjectTagging', 's3:PutObjectVersionTagging', 's3:GetObjectVersionTagging'],
        resources: [`${bucket}/*`],
      },
      { actions: ['s3:PutBucketNotification', 's3:GetBucketNotification'], resources: [bucket] },
      {
        actions: ['s3:PutObject'],
        resources: [`${bucket}/malware-protection-resource-validation-object`],
        conditions: { StringEquals: { 'aws:ResourceAccount': '111122223333' } },
      },
      { actions: ['s3:ListBucket'], resources: [bucket] },
      { actions: ['s3:GetObject', 's3:GetObjectVersion'], resources: [`${bucket}/*`] },
    ]);
    expect(MALWARE_PROTECTION_PRINCIPAL).toBe('malware-protection-plan.guardduty.amazonaws.com');
  });
});
