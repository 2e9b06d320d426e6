import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { SCAN_RECORDER_RETRIES, scanRecorderFunction, scanTimeoutFunction } from '../../infra/declarations/function-settings.js';
import { MALWARE_PROTECTION_PRINCIPAL } from '../../infra/declarations/permissions.js';
import { FILES_PREFIX, PREVIEWS_PREFIX } from '../../shared/files/keys.js';
import { SCAN_RESULT_DETAIL_TYPE, SCAN_RESULT_SOURCE } from '../../shared/scanning/result-event.js';
import { SCAN_TIMER_BATCH_SIZE, SCAN_TIMER_DELIVERIES, SCAN_TIMER_TIMEOUT_SECONDS } from '../../shared/scanning/timers.js';
import type { Json } from '../support/api.js';
import { resourcesOf, synthesize } from './synth.js';
import { expectTimerQueue, functionOf } from './timer-queues.js';

const only = (template: Template, type: string): [string, Json] => {
  const found = Object.entries(resourcesOf(template, type));
  expect(found, type).toHaveLength(1);
  return found[0]!;
};

const recorderOf = (template: Template) => functionOf(template, scanRecorderFunction.name);

/**
 * Scanning as synthesized (infra/stack/constructs/scanning.ts): GuardDuty's
 * plan on the files prefix with its role, the rule to the recorder, the
 * recorder's retries, dead letters and alarm, and the context that turns it
 * off. Run by stack.test.ts on its template.
 */
export function scanningTemplateTests(template: () => Template): void {
  describe('scanning', () => {
    it('protects the files prefix alone (thumbnails live outside it), tagging what it scans, with a role GuardDuty assumes', () => {
      const [, plan] = only(template(), 'AWS::GuardDuty::MalwareProtectionPlan');
      expect(plan.Properties.ProtectedResource.S3Bucket.ObjectPrefixes).toEqual([FILES_PREFIX]);
      expect(PREVIEWS_PREFIX.startsWith(FILES_PREFIX)).toBe(false);
      expect(plan.Properties.Actions).toEqual({ Tagging: { Status: 'ENABLED' } });
      const roleId = plan.Properties.Role['Fn::GetAtt'][0];
      const role = resourcesOf(template(), 'AWS::IAM::Role')[roleId]!;
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: MALWARE_PROTECTION_PRINCIPAL } },
      ]);
      const statements: Json[] = role.Properties.Policies[0].PolicyDocument.Statement;
      expect(statements.flatMap((statement) => [statement.Action].flat()).sort()).toEqual(
        [
          'events:DeleteRule',
          'events:DescribeRule',
          'events:ListTargetsByRule',
          'events:PutRule',
          'events:PutTargets',
          'events:RemoveTargets',
          's3:GetBucketNotification',
          's3:GetObject',
          's3:GetObjectTagging',
          's3:GetObjectVersion',
          's3:GetObjectVersionTagging',
          's3:ListBucket',
          's3:PutBucketNotification',
          's3:PutObject',
          's3:PutObjectTagging',
          's3:PutObjectVersionTagging',
        ].sort(),
      );
    });

    it(`sends GuardDuty's scan results of this plan to the recorder, which Lambda retries ${SCAN_RECORDER_RETRIES} times before its dead letters, with an alarm on the first`, () => {
      const [planId] = only(template(), 'AWS::GuardDuty::MalwareProtectionPlan');
      const [recorderId, recorder] = recorderOf(template());
      const rules = Object.values(resourcesOf(template(), 'AWS::Events::Rule')).filter(
        ({ Properties }) => Properties.EventPattern?.source?.[0] === SCAN_RESULT_SOURCE,
      );
      expect(rules).toHaveLength(1);
      const rule = rules[0]!.Properties;
      expect(rule.EventPattern).toEqual({
        source: [SCAN_RESULT_SOURCE],
        'detail-type': [SCAN_RESULT_DETAIL_TYPE],
        resources: [{ 'Fn::GetAtt': [planId, 'Arn'] }],
      });
      expect(rule.Targets).toHaveLength(1);
      expect(rule.Targets[0].Arn).toEqual({ 'Fn::GetAtt': [recorderId, 'Arn'] });
      const deadLetters = rule.Targets[0].DeadLetterConfig.Arn['Fn::GetAtt'][0];
      expect(deadLetters).toMatch(/ScanResultsDeadLetters/);
      expect(recorder.Properties.DeadLetterConfig.TargetArn).toEqual({ 'Fn::GetAtt': [deadLetters, 'Arn'] });
      const invokeConfigs = Object.values(resourcesOf(template(), 'AWS::Lambda::EventInvokeConfig')).filter(
        ({ Properties }) => Properties.FunctionName.Ref === recorderId,
      );
      expect(invokeConfigs.map(({ Properties }) => Properties.MaximumRetryAttempts)).toEqual([SCAN_RECORDER_RETRIES]);
      const alarms = Object.values(resourcesOf(template(), 'AWS::CloudWatch::Alarm')).filter(({ Properties }) =>
        JSON.stringify(Properties.Dimensions).includes(deadLetters),
      );
      expect(alarms).toHaveLength(1);
      expect(recorder.Properties.Environment.Variables).toMatchObject({ SCANNING: 'on', SCAN_UNSCANNABLE: 'hold' });
    });

    it('asks for a new scan (on `*`: the action has no resource type), and reads and writes no file', () => {
      const [, recorder] = recorderOf(template());
      const roleId = recorder.Properties.Role['Fn::GetAtt'][0];
      const statements = Object.values(resourcesOf(template(), 'AWS::IAM::Policy'))
        .filter(({ Properties }) => Properties.Roles.some((role: Json) => role.Ref === roleId))
        .flatMap(({ Properties }) => Properties.PolicyDocument.Statement);
      const actions = statements.flatMap((statement: Json) => [statement.Action].flat());
      expect(actions.filter((action: string) => action.startsWith('s3:'))).toEqual([]);
      const rescans = statements.filter((statement: Json) => [statement.Action].flat().includes('guardduty:SendObjectMalwareScan'));
      expect(rescans.map((statement: Json) => statement.Resource)).toEqual(['*']);
    });
  });

  describe('the scan timeout', () => {
    it(`reads the timers' queue ${SCAN_TIMER_BATCH_SIZE} at a time with partial batch failures; a timer goes to its dead letters after ${SCAN_TIMER_DELIVERIES} deliveries, with an alarm on the first`, () => {
      expectTimerQueue(template(), {
        consumer: scanTimeoutFunction.name,
        queue: 'FunctionsScanningScanTimerQueue',
        deadLetters: 'FunctionsScanningScanTimersDeadLetters',
        batchSize: SCAN_TIMER_BATCH_SIZE,
        deliveries: SCAN_TIMER_DELIVERIES,
        timeoutSeconds: SCAN_TIMER_TIMEOUT_SECONDS,
        variable: 'SCAN_TIMER_QUEUE_URL',
      });
    });
  });

  describe('scanning off (context scanning=off)', () => {
    it('creates no plan, rule, recorder or timers, and tells the functions every file is not scanned', () => {
      const off = synthesize({ scanning: 'off' });
      try {
        expect(Object.keys(resourcesOf(off.template, 'AWS::GuardDuty::MalwareProtectionPlan'))).toEqual([]);
        const functions = Object.entries(resourcesOf(off.template, 'AWS::Lambda::Function'));
        for (const { name } of [scanRecorderFunction, scanTimeoutFunction])
          expect(functions.some(([id]) => id.startsWith(`Functions${name}`))).toBe(false);
        expect(Object.keys(resourcesOf(off.template, 'AWS::SQS::Queue')).filter((id) => id.includes('ScanTimer'))).toEqual([]);
        for (const [, { Properties }] of functions)
          if (Properties.Environment?.Variables?.FILES_BUCKET) expect(Properties.Environment.Variables.SCANNING).toBe('off');
      } finally {
        off.remove();
      }
    });
  });
}
