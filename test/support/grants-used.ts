import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { functionRoles, type Grant, type GrantUsed, grantsOf, type LocalResources } from '../../infra/local/iam.js';
import { byTableRole } from '../../shared/dynamo/tables.js';

/**
 * Least privilege, proven over the integration lane: every test server tells
 * which grants its functions' calls were allowed by (infra/local/iam.ts), each
 * worker appends them to a file of its own in the run's folder, and once the
 * whole lane has run, a grant no call used fails the run unless it is listed
 * below with why no test can reach it.
 */
export const UNUSED_GRANTS: Readonly<Record<string, string>> = {
  ...forEach(
    ['CreateConversation', 'UploadAttachment', 'StartUploadSession', 'CompleteUploadSession'],
    (route) => `${route} dynamodb:DeleteItem table:idempotency`,
    'removes a record past its 24 hours before the key is claimed anew (DynamoIdempotencyStore.removeExpired): ' +
      "the service's clock is the system's, which a test over HTTP cannot move (idempotency-store.test.ts proves it on the store)",
  ),
  ...forEach(
    ['events:PutRule', 'events:DeleteRule', 'events:PutTargets', 'events:RemoveTargets', 'events:DescribeRule', 'events:ListTargetsByRule'],
    (action) =>
      `MalwareProtectionPlan ${action} arn:aws:events:us-east-1:000000000000:rule/DO-NOT-DELETE-AmazonGuardDutyMalwareProtectionS3*`,
    "GuardDuty's own managed rule, which it creates and watches on AWS; the scanner's stand-in hears of objects from the S3 stand-in instead",
  ),
  ...forEach(
    ['s3:GetObjectTagging', 's3:PutObjectVersionTagging', 's3:GetObjectVersionTagging', 's3:GetObjectVersion'],
    (action) => `MalwareProtectionPlan ${action} bucket/*`,
    "AWS's documented policy for the plan's role; the stand-in reads and tags the current object only (the bucket is not versioned)",
  ),
  ...forEach(
    ['s3:PutBucketNotification', 's3:GetBucketNotification'],
    (action) => `MalwareProtectionPlan ${action} bucket`,
    "GuardDuty turns on the bucket's EventBridge notifications when the plan is created; the stand-in needs none",
  ),
  'MalwareProtectionPlan s3:PutObject bucket/malware-protection-resource-validation-object':
    'GuardDuty writes its validation object when the plan is created on AWS; the stand-in has no plan to validate',
};

/**
 * Grants only the randomized fault run reaches, when its faults happen to fall there: neither used nor unused
 * fails the run. A deterministic test of the path takes the grant off this list.
 */
export const GRANTS_REACHED_BY_CHANCE: Readonly<Record<string, string>> = {
  'MalwareProtectionPlan s3:ListBucket bucket':
    "the scanner's stand-in reads an object removed before its scan (a 404 needs ListBucket): only when a test removes a file within the scan's delay",
  'CompleteUploadSession s3:ListBucket bucket':
    'a completion that finds its file gone answers 404, not 403 (S3 checks ListBucket): local-iam.test.ts proves it with the grant taken away; ' +
    "the randomized run's faults sometimes reach it",
};

function forEach<T>(items: readonly T[], key: (item: T) => string, reason: string): Record<string, string> {
  return Object.fromEntries(items.map((item) => [key(item), reason]));
}

/** The stream reads the roles carry are CDK's grants (infra/local/iam.ts, streamReadPermissions), not infra/declarations/permissions.ts's. */
const STREAM_READS = new Set(['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams']);

const keyOf = ({ role, action, resource }: Grant) => `${role} ${action} ${resource}`;

const recorded = new Set<string>();

/** Appends each grant not yet told by this worker to its file in `directory`. */
export function recordGrantsIn(directory: string): GrantUsed {
  return (grant) => {
    const key = keyOf(grant);
    if (recorded.has(key)) return;
    recorded.add(key);
    appendFileSync(join(directory, `${process.pid}.txt`), `${key}\n`);
  };
}

/** Every grant of infra/declarations/permissions.ts the local IAM enforces, named as the recording names them. */
export function everyGrant(): string[] {
  const resources: LocalResources = { account: '000000000000', region: 'us-east-1', tables: byTableRole((role) => role), bucket: 'files' };
  const roles = functionRoles({ accessKeyId: 'local' }, resources);
  const grants = [...roles.values()].flatMap((role) => grantsOf(role, resources)).filter(({ action }) => !STREAM_READS.has(action));
  return [...new Set(grants.map(keyOf))].sort();
}

/** What the lane's calls left unused, and what the list says is unused but was used (a stale reason). */
export function unusedGrants(directory: string): { unused: string[]; usedAfterAll: string[] } {
  const used = new Set(readdirSync(directory).flatMap((file) => readFileSync(join(directory, file), 'utf8').split('\n').filter(Boolean)));
  return {
    unused: everyGrant().filter((grant) => !used.has(grant) && !(grant in UNUSED_GRANTS) && !(grant in GRANTS_REACHED_BY_CHANCE)),
    usedAfterAll: Object.keys(UNUSED_GRANTS).filter((grant) => used.has(grant)),
  };
}
