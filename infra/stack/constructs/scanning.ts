import { Duration, type RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { CfnMalwareProtectionPlan } from 'aws-cdk-lib/aws-guardduty';
import { PolicyDocument, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { CfnBucket, IBucket } from 'aws-cdk-lib/aws-s3';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { FILES_PREFIX } from '../../../shared/files/keys.js';
import { SCAN_RESULT_DETAIL_TYPE, SCAN_RESULT_SOURCE } from '../../../shared/scanning/result-event.js';
import { SCAN_TIMER_DELIVERIES, SCAN_TIMER_VISIBILITY_SECONDS } from '../../../shared/scanning/timers.js';
import {
  MALWARE_PROTECTION_PRINCIPAL,
  MALWARE_PROTECTION_RULE_PATTERN,
  malwareProtectionPlanPermissions,
} from '../../declarations/permissions.js';
import { consumedQueue, deadLettersWithAlarm } from './dead-letters.js';

const named = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value);

/**
 * Malware scanning (docs/api.md, "Scanning"): GuardDuty's malware protection
 * plan on the files prefix (thumbnails live under previews/, outside it),
 * tagging what it scans, with its own role holding exactly the policy AWS
 * documents; and the EventBridge rule that sends its scan results to the
 * recorder, whose failed events wait in a dead-letter queue with an alarm.
 * Beside it, the scan timers' queue (docs/decisions.md, "The scan timeout"):
 * the fan-out sends each new file's timer delayed until its timeout is due,
 * and a timer its function failed every delivery waits in its own
 * dead-letter queue, with an alarm.
 */
export class Scanning extends Construct {
  readonly plan: CfnMalwareProtectionPlan;
  readonly planRole: Role;
  readonly rule: Rule;
  readonly deadLetters: Queue;
  readonly alarm: Alarm;
  readonly timers: Queue;
  readonly timerDeadLetters: Queue;
  readonly timerAlarm: Alarm;

  constructor(scope: Construct, id: string, props: { bucket: IBucket; removalPolicy: RemovalPolicy }) {
    super(scope, id);
    const { account, region, partition } = Stack.of(this);
    const eventsRuleArn = `arn:${partition}:events:${region}:${account}:rule/${MALWARE_PROTECTION_RULE_PATTERN}`;
    this.planRole = new Role(this, 'PlanRole', {
      assumedBy: new ServicePrincipal(MALWARE_PROTECTION_PRINCIPAL),
      inlinePolicies: {
        MalwareProtection: new PolicyDocument({
          statements: malwareProtectionPlanPermissions(props.bucket.bucketArn, eventsRuleArn, account).map(
            (permission) => new PolicyStatement(permission),
          ),
        }),
      },
    });
    const bucketId = Stack.of(this).getLogicalId(props.bucket.node.defaultChild as CfnBucket);
    Validations.of(this.planRole).acknowledge(
      {
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/*]`,
        reason: "AWS's documented policy for a malware protection plan's role: GuardDuty reads and tags every object it scans.",
      },
      {
        // As cdk-nag writes the ARN: a pseudo parameter by its name, a region or account the stack fixes as it is.
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:events:${named(region, 'Region')}:${named(account, 'AccountId')}:rule/${MALWARE_PROTECTION_RULE_PATTERN}]`,
        reason: "AWS's documented policy: the managed rule GuardDuty creates for the plan, named by its DO-NOT-DELETE prefix.",
      },
    );
    this.plan = new CfnMalwareProtectionPlan(this, 'Plan', {
      role: this.planRole.roleArn,
      protectedResource: { s3Bucket: { bucketName: props.bucket.bucketName, objectPrefixes: [FILES_PREFIX] } },
      actions: { tagging: { status: 'ENABLED' } },
    });
    // The role's policy before the plan: GuardDuty validates it when the plan is created.
    this.plan.node.addDependency(this.planRole);

    const { deadLetters, alarm } = deadLettersWithAlarm(this, 'ScanResults', {
      removalPolicy: props.removalPolicy,
      alarmDescription:
        "A scan result could not be recorded after Lambda's retries: its attachment may stay pending. Redrive the dead-letter queue (to the recorder) after fixing the cause.",
    });
    this.deadLetters = deadLetters;
    this.alarm = alarm;
    this.rule = new Rule(this, 'ScanResults', {
      description: "GuardDuty's malware scan results of the files bucket, to the scan recorder",
      eventPattern: { source: [SCAN_RESULT_SOURCE], detailType: [SCAN_RESULT_DETAIL_TYPE], resources: [this.plan.attrArn] },
    });

    const timers = consumedQueue(this, 'ScanTimers', 'ScanTimerQueue', {
      removalPolicy: props.removalPolicy,
      alarmDescription:
        "A scan timer failed every delivery: its file may stay pending if GuardDuty's result was lost too. Redrive the dead-letter queue (to the timers' queue) after fixing the cause.",
      visibilitySeconds: SCAN_TIMER_VISIBILITY_SECONDS,
      deliveries: SCAN_TIMER_DELIVERIES,
    });
    this.timers = timers.queue;
    this.timerDeadLetters = timers.deadLetters;
    this.timerAlarm = timers.alarm;
  }

  /** The recorder as the rule's target; what EventBridge cannot deliver goes to the same dead letters as what the recorder failed. */
  recordWith(recorder: IFunction): void {
    this.rule.addTarget(
      new LambdaFunction(recorder, { deadLetterQueue: this.deadLetters, retryAttempts: 185, maxEventAge: Duration.hours(24) }),
    );
  }
}
