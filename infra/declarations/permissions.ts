import {
  attachmentIndexes,
  byTableRole,
  conversationIndexes,
  stackTables,
  type TableDefinition,
  type TableRole,
} from '../../shared/dynamo/tables.js';
import { FILES_PREFIX, PREVIEWS_PREFIX } from '../../shared/files/keys.js';
import { FEED_APPEND, type FileAccess, type ItemCall, type QueryTarget, type Route } from '../../shared/routes.js';

/**
 * Least privilege, as data: what a route's `access` declaration (shared/routes.ts)
 * allows, over the ARNs of the stack's resources. Pure, so the rules are tested
 * without synthesizing; the stack turns each entry into a policy statement.
 */
export interface Permission {
  actions: string[];
  resources: string[];
  /** IAM condition operators and keys, as a policy statement's Condition (CDK's PolicyStatement `conditions`). */
  conditions?: Record<string, Record<string, string | string[]>>;
}

/** Each table's ARN and definition, by its role (shared/dynamo/tables.ts), and the files bucket's. */
export interface DataArns extends Record<TableRole, TableArn> {
  /** The files bucket's ARN (`arn:aws:s3:::name`). */
  filesBucket: string;
}

export interface TableArn {
  arn: string;
  definition: TableDefinition;
}

// Item calls on the table only (a route's Query is its own declaration, `queries`), each the route
// declares from its code paths (shared/routes.ts, ItemCall). No Scan: every list is a Query
// (docs/api.md); the one batch is a list's BatchGetItem of its large groups' threads. The local stand-ins enforce these
// permissions with an IAM evaluator (infra/local/iam.ts).
const ITEM_ACTIONS: Record<ItemCall, string> = {
  get: 'dynamodb:GetItem',
  put: 'dynamodb:PutItem',
  update: 'dynamodb:UpdateItem',
  delete: 'dynamodb:DeleteItem',
  check: 'dynamodb:ConditionCheckItem',
  'batch-get': 'dynamodb:BatchGetItem',
};
const itemActions = (calls: readonly ItemCall[]) => [...new Set(calls)].map((call) => ITEM_ACTIONS[call]);
/**
 * Idempotency-Key records are read, claimed and completed (conditional UpdateItem, which
 * also creates the claim: shared/idempotency/dynamo-store.ts) and released (DeleteItem)
 * by key, never put whole nor queried. The local IAM found the UpdateItem missing and the
 * PutItem unused (issue 26).
 */
const IDEMPOTENCY_ACTIONS = itemActions(['get', 'update', 'delete']);

// s3:PutObject also covers CreateMultipartUpload, UploadPart and CompleteMultipartUpload.
const FILE_ACTIONS: Record<Exclude<FileAccess, 'list'>, string> = {
  get: 's3:GetObject',
  put: 's3:PutObject',
  delete: 's3:DeleteObject',
  'list-parts': 's3:ListMultipartUploadParts',
  abort: 's3:AbortMultipartUpload',
};

/** The ARNs of the stack's data: every table of stackTables by `tableArnOf` its role, and the files bucket's. */
export function dataArnsOf(tableArnOf: (role: TableRole) => string, filesBucket: string): DataArns {
  return { ...byTableRole((role) => ({ arn: tableArnOf(role), definition: stackTables[role] })), filesBucket };
}

/** What a Query of the target is authorised on: the table's ARN, or the index's (no `index/*` wildcard). */
function queryArn(target: QueryTarget, arns: DataArns): string {
  const [role, index] = target.split('/') as [TableRole, string | undefined];
  const { arn, definition } = arns[role];
  if (index === undefined) return arn;
  if (![...definition.indexes, ...(definition.localIndexes ?? [])].some(({ name }) => name === index))
    throw new Error(`no index ${index} on the ${role} table`);
  return `${arn}/index/${index}`;
}

/**
 * The cleanup function (functions/cleanup.ts): it finds a removed
 * conversation's attachment records on the attachments table's
 * by_conversation index (Query), removes each in a transaction with its
 * uploader's attachment.deleted event (DeleteItem on the attachments table,
 * the feed's head and event as every writer of a feed), and deletes removed
 * attachments' files; before removing an orphan file or a removed upload
 * session's leftovers it reads the one attachment record that would hold
 * them (GetItem), and it aborts the session's multipart upload. The stream
 * reads come with the event source mappings (granted by CDK).
 */
export function cleanupPermissions(arns: DataArns): Permission[] {
  return [
    { actions: ['dynamodb:GetItem', 'dynamodb:DeleteItem'], resources: [arns.attachments.arn] },
    { actions: ['dynamodb:Query'], resources: [`${arns.attachments.arn}/index/${attachmentIndexes.conversation.name}`] },
    { actions: itemActions(FEED_APPEND), resources: [arns.events.arn] },
    { actions: [FILE_ACTIONS.delete, FILE_ACTIONS.abort], resources: [`${arns.filesBucket}/${FILES_PREFIX}*`] },
    // A removed file's thumbnails go with it (AttachmentLeftovers.removeFile).
    { actions: [FILE_ACTIONS.delete], resources: [`${arns.filesBucket}/${PREVIEWS_PREFIX}*`] },
  ];
}

/**
 * The fan-out function (functions/fan-out.ts): attachment changes reaching
 * the other members of their thread. It reads a contact's uniqueness record
 * and a side (GetItem), finds a group thread's sides on the conversations
 * table's by_thread index (Query there and on no other index), and writes
 * each member's transaction: their side's activity (UpdateItem, or only a
 * ConditionCheck, authorised as ConditionCheckItem, when the side is already
 * at or after the upload's time: a redelivered record, two uploads in the
 * same second) or, for a
 * contact, their new side with its uniqueness record (PutItem), and their
 * events with the records of the changes delivered (the feed's head and
 * PutItem). It queues new images' previews (sqs:SendMessage on the previews
 * queue), a thread's settling timer as it becomes large (on the settling
 * timers' queue) and new files' scan timers (on the scan timers' queue, where
 * scanning is on). No S3, no other table. The attachments stream's reads
 * come with the event source mapping (granted by CDK).
 */
export function fanOutPermissions(
  arns: DataArns,
  previewQueueArn: string,
  settlingQueueArn: string,
  scanTimerQueueArn?: string,
): Permission[] {
  return [
    // A new record pending its scan: the kept result read, the record settled and the result removed (settleKeptOrTime).
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'], resources: [arns.attachments.arn] },
    {
      actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:ConditionCheckItem'],
      resources: [arns.conversations.arn],
    },
    { actions: ['dynamodb:Query'], resources: [`${arns.conversations.arn}/index/${conversationIndexes.thread.name}`] },
    { actions: itemActions(FEED_APPEND), resources: [arns.events.arn] },
    // A group's check of which changes its members were delivered already (SideDelivery.notYetDelivered).
    { actions: ['dynamodb:BatchGetItem'], resources: [arns.events.arn] },
    // Each new record whose preview is pending, to the preview worker (SendMessageBatch is authorised as SendMessage).
    { actions: ['sqs:SendMessage'], resources: [previewQueueArn] },
    // A thread that becomes large, its settling timer (FanOut's sweep).
    { actions: ['sqs:SendMessage'], resources: [settlingQueueArn] },
    // Each new record pending its scan, its timer (settleKeptOrTime).
    ...(scanTimerQueueArn ? [{ actions: ['sqs:SendMessage'], resources: [scanTimerQueueArn] }] : []),
  ];
}

/**
 * The preview worker (functions/preview.ts): it reads the record (GetItem)
 * and settles its preview in a transaction with the uploader's event
 * (UpdateItem on the attachments table, the feed's head and event as every
 * writer of a feed); it reads the files (GetObject) and writes and removes
 * thumbnails under their own prefix, nothing else of the bucket. The queue's
 * reads come with the event source mapping (granted by CDK).
 */
export function previewWorkerPermissions(arns: DataArns): Permission[] {
  return [
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], resources: [arns.attachments.arn] },
    { actions: itemActions(FEED_APPEND), resources: [arns.events.arn] },
    { actions: [FILE_ACTIONS.get], resources: [`${arns.filesBucket}/${FILES_PREFIX}*`] },
    { actions: [FILE_ACTIONS.put, FILE_ACTIONS.delete], resources: [`${arns.filesBucket}/${PREVIEWS_PREFIX}*`] },
  ];
}

/**
 * The scan recorder (functions/scan-result.ts): it keeps each result beside
 * its record (PutItem), reads the record (GetItem) and settles it in a
 * transaction with the uploader's event and the kept result's removal
 * (UpdateItem, DeleteItem; the feed's head and event as every writer of a
 * feed), and asks GuardDuty to scan a file again once after a failed scan
 * (guardduty:SendObjectMalwareScan, which IAM authorises on no resource
 * type: `*`, as the local IAM's action table requires). No S3: an infected
 * file's bytes go from the cleanup, when the result is removed.
 */
export function scanRecorderPermissions(arns: DataArns): Permission[] {
  return [
    { actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'], resources: [arns.attachments.arn] },
    { actions: itemActions(FEED_APPEND), resources: [arns.events.arn] },
    { actions: [RESCAN_ACTION], resources: ['*'] },
  ];
}

/**
 * The scan timeout (functions/scan-timeout.ts): it reads the kept result and
 * the record (GetItem) and settles the record in a transaction with the
 * uploader's event (UpdateItem; the feed's head and event as every writer of
 * a feed), with a kept result's removal when one came meanwhile (DeleteItem).
 * The queue's reads come with the event source mapping (granted by CDK).
 */
export function scanTimeoutPermissions(arns: DataArns): Permission[] {
  return [
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'], resources: [arns.attachments.arn] },
    { actions: itemActions(FEED_APPEND), resources: [arns.events.arn] },
  ];
}

/**
 * A large thread's settling sweep (functions/large-thread-settling.ts): it
 * reads the thread's record and each unmarked side (GetItem), finds the
 * unmarked sides on by_thread (Query there only), reads back the changes the
 * switch passed over and which a side was delivered already (BatchGetItem on
 * the events table), writes each such side's transaction as the fan-out
 * does (its activity, UpdateItem or a ConditionCheck when it is already at
 * or after the upload; its events and the records of the changes, the
 * feed's head and PutItem), then marks it and the thread (UpdateItem). The
 * queue's reads come with the event source mapping (granted by CDK).
 */
export function largeThreadSettlingPermissions(arns: DataArns): Permission[] {
  return [
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'], resources: [arns.conversations.arn] },
    { actions: ['dynamodb:Query'], resources: [`${arns.conversations.arn}/index/${conversationIndexes.thread.name}`] },
    { actions: [...itemActions(FEED_APPEND), 'dynamodb:BatchGetItem'], resources: [arns.events.arn] },
  ];
}

/** GuardDuty's on-demand scan of one object (SendObjectMalwareScan). */
export const RESCAN_ACTION = 'guardduty:SendObjectMalwareScan';

/** The principal GuardDuty's malware protection plans assume their role as. */
export const MALWARE_PROTECTION_PRINCIPAL = 'malware-protection-plan.guardduty.amazonaws.com';

/**
 * The role a malware protection plan scans and tags the bucket's objects
 * with: exactly the policy AWS documents ("Create or update IAM role
 * policy", GuardDuty User Guide), for this bucket and account (no KMS
 * statement: the bucket is S3-managed encryption). `eventsRuleArn` is the
 * managed rule's ARN pattern in the stack's region and account.
 */
export function malwareProtectionPlanPermissions(bucketArn: string, eventsRuleArn: string, account: string): Permission[] {
  return [
    {
      actions: ['events:PutRule', 'events:DeleteRule', 'events:PutTargets', 'events:RemoveTargets'],
      resources: [eventsRuleArn],
      conditions: { StringLike: { 'events:ManagedBy': MALWARE_PROTECTION_PRINCIPAL } },
    },
    { actions: ['events:DescribeRule', 'events:ListTargetsByRule'], resources: [eventsRuleArn] },
    {
      actions: ['s3:PutObjectTagging', 's3:GetObjectTagging', 's3:PutObjectVersionTagging', 's3:GetObjectVersionTagging'],
      resources: [`${bucketArn}/*`],
    },
    { actions: ['s3:PutBucketNotification', 's3:GetBucketNotification'], resources: [bucketArn] },
    {
      actions: ['s3:PutObject'],
      resources: [`${bucketArn}/malware-protection-resource-validation-object`],
      conditions: { StringEquals: { 'aws:ResourceAccount': account } },
    },
    { actions: ['s3:ListBucket'], resources: [bucketArn] },
    { actions: ['s3:GetObject', 's3:GetObjectVersion'], resources: [`${bucketArn}/*`] },
  ];
}

/** The managed rule GuardDuty creates for a plan, as its documented policy names it. */
export const MALWARE_PROTECTION_RULE_PATTERN = 'DO-NOT-DELETE-AmazonGuardDutyMalwareProtectionS3*';

export function permissionsFor(route: Pick<Route, 'access' | 'idempotent'>, arns: DataArns): Permission[] {
  const { access } = route;
  const permissions: Permission[] = [];
  const table = (calls: readonly ItemCall[] | undefined, target: TableArn) => {
    if (calls?.length) permissions.push({ actions: itemActions(calls), resources: [target.arn] });
  };
  table(access.conversations, arns.conversations);
  table(access.attachments, arns.attachments);
  table(access.uploadSessions, arns.uploadSessions);
  table(access.events, arns.events);
  if (access.queries?.length)
    permissions.push({ actions: ['dynamodb:Query'], resources: access.queries.map((target) => queryArn(target, arns)) });
  if (route.idempotent) permissions.push({ actions: IDEMPOTENCY_ACTIONS, resources: [arns.idempotency.arn] });
  const objectActions = [...new Set(access.files)].filter((action) => action !== 'list');
  if (objectActions.length) {
    permissions.push({
      actions: objectActions.map((action) => FILE_ACTIONS[action]),
      // Object keys are minted per user and attachment at run time: the prefix is the narrowest scope.
      resources: [`${arns.filesBucket}/${FILES_PREFIX}*`],
    });
  }
  // A route that links to files links to their thumbnails too (a presigned GET is authorised as its signer).
  if (access.files?.includes('get'))
    permissions.push({ actions: [FILE_ACTIONS.get], resources: [`${arns.filesBucket}/${PREVIEWS_PREFIX}*`] });
  if (access.files?.includes('list')) permissions.push(listFilesPermission(arns.filesBucket));
  return permissions;
}

/**
 * s3:ListBucket is a bucket action: its resource is the bucket, and the
 * s3:prefix condition keeps it to the files prefix. Its only use here is that
 * S3 then answers a GET or HEAD of a missing key 404 (NoSuchKey, NotFound)
 * rather than 403 AccessDenied: S3 checks it with the missing key as
 * s3:prefix (docs/deploying.md, "A missing file is a 404").
 */
export function listFilesPermission(filesBucketArn: string): Permission {
  return { actions: ['s3:ListBucket'], resources: [filesBucketArn], conditions: { StringLike: { 's3:prefix': `${FILES_PREFIX}*` } } };
}

/**
 * The real-time publisher (functions/realtime-publisher.ts): publishing to
 * the Event API's one channel namespace over HTTP with IAM, nothing else
 * (no connect, no subscribe; the events stream's reads come with the event
 * source mapping, granted by CDK). The namespace publishes with IAM only, so
 * this grant is what makes publishing the service's alone.
 */
export const REALTIME_PUBLISH_ACTION = 'appsync:EventPublish';

export function realtimePublisherPermissions(namespaceArn: string): Permission[] {
  return [{ actions: [REALTIME_PUBLISH_ACTION], resources: [namespaceArn] }];
}

/** A channel namespace's ARN, as IAM names it for appsync:Event* actions. */
export const channelNamespaceArn = (api: { region: string; account: string; apiId: string }, namespace: string) =>
  `arn:aws:appsync:${api.region}:${api.account}:apis/${api.apiId}/channelNamespace/${namespace}`;
