import { AsyncLocalStorage } from 'node:async_hooks';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { Config } from '../../shared/config.js';
import { byTableRole, type TableRole, tableRoles } from '../../shared/dynamo/tables.js';
import { logger } from '../../shared/observability.js';
import { routes } from '../../shared/routes.js';
import type { Credentials } from '../../shared/s3/signer.js';
import {
  cleanupFunction,
  fanOutFunction,
  largeThreadSettlingFunction,
  previewFunction,
  realtimePublisherFunction,
  scanRecorderFunction,
  scanTimeoutFunction,
} from '../declarations/function-settings.js';
import {
  cleanupPermissions,
  type DataArns,
  dataArnsOf,
  fanOutPermissions,
  largeThreadSettlingPermissions,
  MALWARE_PROTECTION_RULE_PATTERN,
  malwareProtectionPlanPermissions,
  type Permission,
  permissionsFor,
  previewWorkerPermissions,
  scanRecorderPermissions,
  scanTimeoutPermissions,
} from '../declarations/permissions.js';

/**
 * IAM, for the local stand-ins: each function's role as the stack grants it
 * (infra/declarations/permissions.ts, rendered as the stack renders it: one Allow
 * statement per permission), and a real policy evaluator
 * (@cloud-copilot/iam-simulate) that decides each call a function makes, so
 * DynamoDB Local (dynamodb-iam.ts) and the S3 stand-in (s3-roles.ts) refuse
 * what AWS would refuse that role. A function is known by the access key it
 * signs with (`functionKeyId`); any other key is the server's own or a
 * test's, which may do anything.
 */

/** The function the stack names the cleanup (infra/declarations/function-settings.ts). */
export const CLEANUP_FUNCTION = cleanupFunction.name;
/** The function the stack names the fan-out (infra/declarations/function-settings.ts). */
export const FAN_OUT_FUNCTION = fanOutFunction.name;
/** The name the stack gives the real-time publisher: it reads the events stream, and signs its publishes, as this function. */
export const REALTIME_PUBLISHER_FUNCTION = realtimePublisherFunction.name;
export const PREVIEW_FUNCTION = previewFunction.name;
export const SCAN_RECORDER_FUNCTION = scanRecorderFunction.name;
export const SCAN_TIMEOUT_FUNCTION = scanTimeoutFunction.name;
export const LARGE_THREAD_SETTLING_FUNCTION = largeThreadSettlingFunction.name;
/** The malware protection plan's role: the scanner's stand-in reads and tags objects as it (infra/local/scanner.ts). */
export const MALWARE_PROTECTION_PLAN = 'MalwareProtectionPlan';

/** The protection plan's ARN, as IAM names it (the stand-in's plan is `local`). */
export const protectionPlanArn = (resources: Pick<LocalResources, 'account' | 'region'>) =>
  `arn:aws:guardduty:${resources.region}:${resources.account}:malware-protection-plan/local`;

/** The local previews queue's name (infra/local/queue.ts): the stand-in's queue URL and ARN end in it. */
export const PREVIEW_QUEUE_NAME = 'previews';
/** The local scan timers' queue's name, likewise. */
export const SCAN_TIMER_QUEUE_NAME = 'scan-timers';
/** The local settling timers' queue's name, likewise. */
export const THREAD_SETTLING_QUEUE_NAME = 'thread-settling';

/** An SQS queue's ARN, as IAM names it. */
export const queueArn = (resources: Pick<LocalResources, 'account' | 'region'>, name: string) =>
  `arn:aws:sqs:${resources.region}:${resources.account}:${name}`;
/** The events pipe's role (infra/stack/constructs/operator-events.ts): the local forwarder reads the stream as it. */
export const EVENTS_PIPE = 'EventsPipe';

/**
 * The key of one function: the base key id with the function's name, the same secret. Letters and
 * digits only, as DynamoDB Local takes no other access key id (UnrecognizedClientException).
 */
export const functionKeyId = (base: { accessKeyId: string }, name: string) => `${base.accessKeyId}${name}`;

const acting = new AsyncLocalStorage<string>();

/**
 * Runs `work` as the function `name`: on AWS every function signs with its own role; locally all
 * functions run on one Composition, so each runs inside `actingAs(name)` and its DynamoDB and S3 calls (and
 * presigned URLs) sign with a key of its own (`functionCredentials`).
 */
export function actingAs<A extends unknown[], R>(name: string, work: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args) => acting.run(name, () => work(...args));
}

/** Credentials that are, at each signing, those of the function acting then (the base ones outside any). */
export function functionCredentials(base: { accessKeyId: string; secretAccessKey: string }): Credentials {
  return async () => {
    const name = acting.getStore();
    return name === undefined ? base : { ...base, accessKeyId: functionKeyId(base, name) };
  };
}

/** One call as IAM authorises it: an action on a resource, with the request's condition keys. */
export interface AccessRequest {
  action: string;
  resource: string;
  context?: Record<string, string | string[]>;
}

export interface FunctionRole {
  /** The function (or pipe) as the stack names it. */
  name: string;
  /** The caller a denial names: the role's session, as Lambda assumes it. */
  principal: string;
  permissions: Permission[];
}

/** What the local server's resources are called: the ARNs the roles are granted over. */
export interface LocalResources {
  account: string;
  region: string;
  /** Each table's name, by the part it plays. */
  tables: Record<TableRole, string>;
  bucket: string;
}

/**
 * What a test may change of the grants (e.g. take one away to prove the
 * integration lane then fails): given each role's name and its permissions as
 * the stack grants them, the permissions the local stand-ins enforce.
 */
export type GrantsOverride = (role: string, granted: Permission[]) => Permission[];

/** The table names of a configuration, as the roles are granted over them. */
export function tablesOf(config: Pick<Config, `${TableRole}Table`>): LocalResources['tables'] {
  return byTableRole((role) => config[`${role}Table`]);
}

export const tableArn = (resources: Pick<LocalResources, 'account' | 'region'>, table: string) =>
  `arn:aws:dynamodb:${resources.region}:${resources.account}:table/${table}`;

export function dataArns(resources: LocalResources): DataArns {
  return dataArnsOf((role) => tableArn(resources, resources.tables[role]), `arn:aws:s3:::${resources.bucket}`);
}

/**
 * The stream reads the stack grants a stream's reader without infra/declarations/permissions.ts: CDK's DynamoEventSource
 * (table.grantStreamRead) and the pipe's role (infra/stack/constructs/operator-events.ts) both allow ListStreams
 * on `*` and DescribeStream, GetShardIterator and GetRecords on the table's stream. The stack names the one
 * stream ARN; locally a stream's label changes when it is turned on again, so any stream of that table.
 */
export function streamReadPermissions(tableArns: readonly string[]): Permission[] {
  return [
    {
      actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      resources: tableArns.map((arn) => `${arn}/stream/*`),
    },
    { actions: ['dynamodb:ListStreams'], resources: ['*'] },
  ];
}

/** Every function's role (and the events pipe's), keyed by the access key it signs with locally. */
export function functionRoles(
  base: { accessKeyId: string },
  resources: LocalResources,
  override?: GrantsOverride,
): Map<string, FunctionRole> {
  const arns = dataArns(resources);
  const granted: [string, Permission[]][] = [
    ...routes.map((route) => [route.name, permissionsFor(route, arns)] as [string, Permission[]]),
    [
      CLEANUP_FUNCTION,
      [...cleanupPermissions(arns), ...streamReadPermissions([arns.conversations.arn, arns.attachments.arn, arns.uploadSessions.arn])],
    ],
    [
      FAN_OUT_FUNCTION,
      [
        ...fanOutPermissions(
          arns,
          queueArn(resources, PREVIEW_QUEUE_NAME),
          queueArn(resources, THREAD_SETTLING_QUEUE_NAME),
          queueArn(resources, SCAN_TIMER_QUEUE_NAME),
        ),
        ...streamReadPermissions([arns.attachments.arn]),
      ],
    ],
    [PREVIEW_FUNCTION, previewWorkerPermissions(arns)],
    [SCAN_RECORDER_FUNCTION, scanRecorderPermissions(arns)],
    [SCAN_TIMEOUT_FUNCTION, scanTimeoutPermissions(arns)],
    [LARGE_THREAD_SETTLING_FUNCTION, largeThreadSettlingPermissions(arns)],
    [
      MALWARE_PROTECTION_PLAN,
      malwareProtectionPlanPermissions(
        arns.filesBucket,
        `arn:aws:events:${resources.region}:${resources.account}:rule/${MALWARE_PROTECTION_RULE_PATTERN}`,
        resources.account,
      ),
    ],
    [EVENTS_PIPE, streamReadPermissions([arns.events.arn])],
    [REALTIME_PUBLISHER_FUNCTION, streamReadPermissions([arns.events.arn])],
  ];
  return new Map(
    granted.map(([name, permissions]) => [
      functionKeyId(base, name),
      {
        name,
        principal: `arn:aws:sts::${resources.account}:assumed-role/${name}Role/${name}`,
        permissions: override ? override(name, permissions) : permissions,
      },
    ]),
  );
}

/**
 * One grant of a role, one action on one resource as its policy names it, with this server's
 * tables and bucket by the part they play (`table:attachments/index/by_uploader`, `bucket/files/*`):
 * the same grant on every server, whatever its table prefix.
 */
export interface Grant {
  role: string;
  action: string;
  resource: string;
}

/** Told of each grant a call was allowed by (the tests' least-privilege check records them). */
export type GrantUsed = (grant: Grant) => void;

/** The evaluator of every function's role over these resources. */
export function localIam(
  base: { accessKeyId: string },
  resources: LocalResources,
  override?: GrantsOverride,
  grantUsed?: GrantUsed,
): PolicyEvaluator {
  const allowed: AllowedCall | undefined = grantUsed
    ? (role, request) => {
        for (const grant of grantsAllowing(role, request, resources)) grantUsed(grant);
      }
    : undefined;
  return new PolicyEvaluator(functionRoles(base, resources, override), resources.account, allowed);
}

/** Every grant of a role: each action of each permission on each of its resources. */
export function grantsOf(role: FunctionRole, resources: LocalResources): Grant[] {
  return role.permissions.flatMap(({ actions, resources: arns }) =>
    actions.flatMap((action) => arns.map((arn) => ({ role: role.name, action, resource: resourceName(arn, resources) }))),
  );
}

/** The grants of the role that allow the request: an action and a resource pattern that match it (conditions aside). */
export function grantsAllowing(role: FunctionRole, request: AccessRequest, resources: LocalResources): Grant[] {
  return role.permissions.flatMap(({ actions, resources: arns }) =>
    actions
      .filter((action) => wildcardMatch(action, request.action, 'i'))
      .flatMap((action) =>
        arns
          .filter((arn) => wildcardMatch(arn, request.resource))
          .map((arn) => ({ role: role.name, action, resource: resourceName(arn, resources) })),
      ),
  );
}

/** IAM's wildcards: `*` any run of characters, `?` one; actions compare without case. */
function wildcardMatch(pattern: string, value: string, flags = ''): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replaceAll('*', '.*')
    .replaceAll('?', '.');
  return new RegExp(`^${source}$`, flags).test(value);
}

/** An ARN with this server's tables and bucket named by the part they play; any other (`*`) as it is. */
function resourceName(arn: string, resources: LocalResources): string {
  const under = (base: string) => (arn === base || arn.startsWith(`${base}/`) ? arn.slice(base.length) : undefined);
  for (const role of tableRoles) {
    const rest = under(tableArn(resources, resources.tables[role]));
    if (rest !== undefined) return `table:${role}${rest}`;
  }
  const inBucket = under(`arn:aws:s3:::${resources.bucket}`);
  return inBucket === undefined ? arn : `bucket${inBucket}`;
}

/** A role's permissions as the identity policy the stack attaches (CDK renders each as one Allow statement). */
export function policyDocument(permissions: readonly Permission[]) {
  return {
    Version: '2012-10-17',
    Statement: permissions.map((permission) => ({
      Effect: 'Allow',
      Action: permission.actions,
      Resource: permission.resources,
      ...(permission.conditions ? { Condition: permission.conditions } : {}),
    })),
  };
}

/** Why a call was refused: the first request of it that its role does not allow, in AWS's words. */
export interface Denial {
  request: AccessRequest;
  role: FunctionRole;
  /** AWS's message: "User: … is not authorized to perform: … on resource: … because no identity-based policy allows the … action". */
  message: string;
  explicit: boolean;
}

export function denialMessage(role: FunctionRole, request: AccessRequest, explicit: boolean): string {
  const why = explicit
    ? 'with an explicit deny in an identity-based policy'
    : `because no identity-based policy allows the ${request.action} action`;
  return `User: ${role.principal} is not authorized to perform: ${request.action} on resource: ${request.resource} ${why}`;
}

/**
 * Decides calls against the roles, with IAM's evaluation (iam-simulate, strict mode: the request's
 * condition keys as given, a key the request lacks does not match). A decision depends only on the
 * role, the action, the resource and the condition keys, so each is made once and kept.
 */
/** Told of each call a role was allowed. */
type AllowedCall = (role: FunctionRole, request: AccessRequest) => void;

export class PolicyEvaluator {
  private readonly decisions = new Map<string, Promise<'Allowed' | 'ImplicitlyDenied' | 'ExplicitlyDenied'>>();
  private readonly policies = new Map<FunctionRole, object>();
  /** Every call refused so far, in AWS's words, each once: what a developer or a test looks at to find a missing grant. */
  readonly refused = new Set<string>();

  constructor(
    readonly roles: ReadonlyMap<string, FunctionRole>,
    private readonly account: string,
    private readonly allowed?: AllowedCall,
    /** IAM's evaluation; a test may count its calls. */
    private readonly evaluate: typeof runSimulation = runSimulation,
  ) {}

  /** The role a request signed with this access key acts as; undefined: the base identity, which may do anything. */
  roleOf(accessKeyId: string | undefined): FunctionRole | undefined {
    return accessKeyId === undefined ? undefined : this.roles.get(accessKeyId);
  }

  /** The first of the requests the role does not allow, or undefined when it allows them all. */
  async denial(role: FunctionRole, requests: readonly AccessRequest[]): Promise<Denial | undefined> {
    for (const request of requests) {
      const result = await this.decide(role, request);
      if (result !== 'Allowed') {
        const explicit = result === 'ExplicitlyDenied';
        const message = denialMessage(role, request, explicit);
        if (!this.refused.has(message)) {
          this.refused.add(message);
          logger.warn(`refused by the local IAM: ${message}`);
        }
        return { request, role, explicit, message };
      }
    }
    for (const request of requests) this.allowed?.(role, request);
    return undefined;
  }

  private decide(role: FunctionRole, request: AccessRequest) {
    const key = JSON.stringify([role.name, request.action, request.resource, request.context ?? {}]);
    let decision = this.decisions.get(key);
    if (!decision) {
      decision = this.simulate(role, request);
      this.decisions.set(key, decision);
      // A failed evaluation is not a decision: the next call tries again.
      decision.catch(() => this.decisions.delete(key));
    }
    return decision;
  }

  private async simulate(role: FunctionRole, request: AccessRequest) {
    let policy = this.policies.get(role);
    if (!policy) {
      policy = policyDocument(role.permissions);
      this.policies.set(role, policy);
    }
    const outcome = await this.evaluate(
      {
        identityPolicies: [{ name: `${role.name}RoleDefaultPolicy`, policy }],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        request: {
          principal: role.principal,
          action: request.action,
          resource: { resource: request.resource, accountId: this.account },
          contextVariables: request.context ?? {},
        },
      },
      { simulationMode: 'Strict' },
    );
    if (outcome.resultType === 'error') {
      throw new Error(`IAM evaluation of ${request.action} on ${request.resource} failed: ${JSON.stringify(outcome.errors)}`);
    }
    return outcome.overallResult;
  }
}
