import type { Template } from 'aws-cdk-lib/assertions';
import { expect } from 'vitest';
import type { Json } from '../support/api.js';
import { resourcesOf } from './synth.js';

/** The one function named `name` (its logical id `Functions<name><hash>`). */
export function functionOf(template: Template, name: string): [string, Json] {
  const found = Object.entries(resourcesOf(template, 'AWS::Lambda::Function')).filter(([id]) =>
    new RegExp(`^Functions${name}[0-9A-F]{8}$`).test(id),
  );
  expect(found, name).toHaveLength(1);
  return found[0]!;
}

/** A queue of delayed timers the fan-out sends and one function reads (the scan timers', the settling timers'). */
export interface TimerQueue {
  /** The function that reads it. */
  consumer: string;
  /** Logical id prefixes of the queue and its dead letters. */
  queue: string;
  deadLetters: string;
  batchSize: number;
  deliveries: number;
  timeoutSeconds: number;
  /** The fan-out's variable that names the queue. */
  variable: string;
}

/**
 * A timers' queue as synthesized: encrypted, read `batchSize` at a time with
 * partial batch failures by its function, a timer to its dead letters after
 * `deliveries`, with an alarm on the first; the fan-out is told where it is
 * and is the one role that may send to it.
 */
export function expectTimerQueue(template: Template, spec: TimerQueue): void {
  const [consumerId, consumer] = functionOf(template, spec.consumer);
  expect(consumer.Properties.Timeout).toBe(spec.timeoutSeconds);
  const queues = resourcesOf(template, 'AWS::SQS::Queue');
  const idOf = (prefix: string) => Object.keys(queues).find((id) => id.startsWith(prefix))!;
  const [queueId, deadLettersId] = [idOf(spec.queue), idOf(spec.deadLetters)];
  expect(queues[queueId]!.Properties).toMatchObject({
    RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [deadLettersId, 'Arn'] }, maxReceiveCount: spec.deliveries },
    SqsManagedSseEnabled: true,
  });
  expect(queues[queueId]!.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * spec.timeoutSeconds);
  const mappings = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping')).filter(
    ({ Properties }) => Properties.FunctionName.Ref === consumerId,
  );
  expect(mappings.map(({ Properties }) => Properties)).toEqual([
    expect.objectContaining({
      EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
      BatchSize: spec.batchSize,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    }),
  ]);
  const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter(
    ({ Properties }) =>
      Properties.Namespace === 'AWS/SQS' &&
      JSON.stringify(Properties.Dimensions) ===
        JSON.stringify([{ Name: 'QueueName', Value: { 'Fn::GetAtt': [deadLettersId, 'QueueName'] } }]),
  );
  expect(alarms).toHaveLength(1);
  const [, fanOut] = functionOf(template, 'FanOut');
  expect(fanOut.Properties.Environment.Variables[spec.variable]).toEqual({ Ref: queueId });
  const senders = Object.values(resourcesOf(template, 'AWS::IAM::Policy')).filter(({ Properties }) =>
    Properties.PolicyDocument.Statement.some(
      (statement: Json) => [statement.Action].flat().includes('sqs:SendMessage') && JSON.stringify(statement.Resource).includes(queueId),
    ),
  );
  expect(senders.map(({ Properties }) => Properties.Roles[0].Ref)).toEqual([expect.stringMatching(/^FunctionsFanOutRole/)]);
}
