import type { Template } from 'aws-cdk-lib/assertions';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler as enrich } from '../../functions/event-detail.js';
import { eventsTable } from '../../shared/dynamo/tables.js';
import { BUS_FILTER_PATTERN, busEnvelope } from '../../shared/events/bus.js';
import { eventId } from '../../shared/events/ids.js';
import { eventItem } from '../../shared/events/item.js';
import type { ApiEvent } from '../../shared/events/model.js';
import { passes } from '../../shared/stream-records.js';
import type { Json } from '../support/api.js';
import { resourcesOf } from './synth.js';

/**
 * The operators' event bus and the pipe that feeds it from the events table's
 * stream (infra/stack/constructs/operator-events.ts), pinned as synthesized; and
 * the local forwarder's envelope held to what the pipe's settings make of the
 * same record. Run by stack.test.ts on its synthesized template (one synth,
 * which takes seconds).
 */
export function operatorEventsTests(template: () => Template): void {
  const getAtt = (id: string, attribute = 'Arn') => ({ 'Fn::GetAtt': [id, attribute] });
  const idOf = (type: string, prefix: string) => {
    const ids = Object.keys(resourcesOf(template(), type)).filter((id) => id.startsWith(prefix));
    expect(ids, `${type} ${prefix}`).toHaveLength(1);
    return ids[0]!;
  };
  const pipe = () => Object.values(resourcesOf(template(), 'AWS::Pipes::Pipe'))[0]!;
  const eventsTableId = () => idOf('AWS::DynamoDB::Table', 'DataEvents');
  const busId = () => idOf('AWS::Events::EventBus', 'OperatorEventsBus');
  const queueId = () => idOf('AWS::SQS::Queue', 'OperatorEventsPipeDeadLetters');
  const enrichmentId = () => idOf('AWS::Lambda::Function', 'FunctionsEventDetail');

  /** A stream record of the events table as Pipes and Lambda receive it. */
  function record(
    eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
    sk: string,
    image: Record<string, { S?: string; N?: string }> = {},
  ): DynamoDBRecord {
    return {
      eventID: `${eventName}-${sk}`,
      eventName,
      eventSource: 'aws:dynamodb',
      awsRegion: 'eu-west-1',
      dynamodb: {
        Keys: { pk: { S: 'user_1' }, sk: { S: sk } },
        NewImage: { pk: { S: 'user_1' }, sk: { S: sk }, ...image },
        StreamViewType: 'NEW_IMAGE',
      },
    };
  }

  const storedEvent: ApiEvent = {
    id: eventId(42),
    type: 'attachment.created',
    created_at: 1_764_000_000,
    data: { object: { id: 'att_1', object: 'attachment', filename: 'quarterly "figures".txt', conversation_id: null, size: 12 } },
    request_id: null,
  };
  /** The item the outbox writes (shared/events/item.ts), as its stream record's image types it. */
  const image = Object.fromEntries(
    Object.entries(eventItem({ user: 'user_1', group: null }, 42, storedEvent)).map(([name, value]) => [
      name,
      typeof value === 'number' ? { N: String(value) } : { S: String(value) },
    ]),
  );
  const eventRecord = record('INSERT', image.sk!.S!, image);

  /** An EventBridge pattern of the pipe's shape (exact values, `prefix`) applied to a record, as Pipes filters. */
  function matches(pattern: unknown, value: unknown): boolean {
    if (Array.isArray(pattern)) {
      return pattern.some((rule) =>
        typeof rule === 'object' && rule !== null && 'prefix' in rule
          ? typeof value === 'string' && value.startsWith(rule.prefix)
          : rule === value,
      );
    }
    if (typeof pattern !== 'object' || pattern === null || typeof value !== 'object' || value === null) return false;
    return Object.entries(pattern).every(([key, inner]) => matches(inner, (value as Record<string, unknown>)[key]));
  }

  /** The value at a `$.a.b` dynamic path, as Pipes resolves a target parameter against the payload. */
  const atPath = (payload: unknown, path: string) =>
    path
      .slice(2)
      .split('.')
      .reduce<Json>((at, name) => at?.[name], payload);

  describe("the operators' event bus", () => {
    it('is a custom bus of the stack, named in its outputs', () => {
      expect(Object.keys(resourcesOf(template(), 'AWS::Events::EventBus'))).toEqual([busId()]);
      expect(template().toJSON().Outputs.EventBusName.Value).toEqual({ Ref: busId() });
    });
  });

  describe('the events pipe', () => {
    it("reads the events table's stream of new images, from the oldest record kept", () => {
      const table = resourcesOf(template(), 'AWS::DynamoDB::Table')[eventsTableId()]!.Properties;
      expect(table.StreamSpecification).toEqual({ StreamViewType: 'NEW_IMAGE' });
      expect(table.TimeToLiveSpecification).toEqual({ AttributeName: eventsTable.timeToLiveAttribute, Enabled: true });
      expect(pipe().Properties.Source).toEqual(getAtt(eventsTableId(), 'StreamArn'));
      expect(pipe().Properties.SourceParameters.DynamoDBStreamParameters).toEqual({
        StartingPosition: 'TRIM_HORIZON',
        // PutEvents takes at most 10 entries.
        BatchSize: 10,
        MaximumRetryAttempts: 10,
        OnPartialBatchItemFailure: 'AUTOMATIC_BISECT',
        // Dead-lettered with 18 of the stream's 24 hours left to redrive it.
        MaximumRecordAgeInSeconds: 6 * 3600,
        DeadLetterConfig: { Arn: getAtt(queueId()) },
      });
    });

    it('keeps inserts of event items only, as the local forwarder does', () => {
      const { Filters } = pipe().Properties.SourceParameters.FilterCriteria;
      expect(Filters).toHaveLength(1);
      const pattern = JSON.parse(Filters[0].Pattern);
      expect(pattern).toEqual({ eventName: ['INSERT'], dynamodb: { Keys: { sk: { S: [{ prefix: 'e#' }] } } } });
      const cases = [
        eventRecord,
        record('INSERT', 'head'), // a user's first event creates the counter
        record('MODIFY', 'head'), // every later one moves it
        record('MODIFY', image.sk!.S!),
        record('REMOVE', image.sk!.S!), // TTL, 30 days on
      ];
      expect(cases.map((each) => matches(pattern, each))).toEqual([true, false, false, false, false]);
      expect(cases.map(passes(BUS_FILTER_PATTERN))).toEqual(cases.map((each) => matches(pattern, each)));
    });

    it('has the enrichment turn each record into its detail and puts it on the bus with source messaging-api and one detail-type, without an input template', () => {
      const { Properties } = pipe();
      expect(Properties.Enrichment).toEqual(getAtt(enrichmentId()));
      expect(Properties.EnrichmentParameters).toBeUndefined();
      expect(Properties.Target).toEqual(getAtt(busId()));
      expect(Properties.TargetParameters).toEqual({
        EventBridgeEventBusParameters: { Source: 'messaging-api', DetailType: 'Messaging API event' },
      });
      expect(Properties.LogConfiguration).toEqual({
        Level: 'ERROR',
        CloudwatchLogsLogDestination: { LogGroupArn: getAtt(idOf('AWS::Logs::LogGroup', 'OperatorEventsPipeLogs')) },
      });
    });

    /**
     * What Pipes makes of one record with this pipe: the enrichment's output
     * element is the entry's Detail as it is (no input template), and each
     * target parameter is its value, or, for a dynamic path (`$…`), the value
     * at that path of the payload Pipes resolves it against, which AWS's
     * documentation leaves open once an enrichment reshapes the record: the
     * source record or the enrichment's output. Both are tried; the entry
     * must be the same, and complete, either way.
     */
    function entriesPutBy(target: Record<string, string>, sourceRecord: DynamoDBRecord, detail: unknown) {
      const resolve = (value: string, payload: unknown) => (value.startsWith('$') ? atPath(payload, value) : value);
      return [sourceRecord, detail].map((payload) => ({
        Source: resolve(target.Source!, payload),
        DetailType: resolve(target.DetailType!, payload),
        Detail: detail,
      }));
    }

    it('puts the same entry whether its dynamic paths resolve against the stream record or the enrichment output: there are none', async () => {
      const [detail] = await enrich([eventRecord]);
      const { EventBridgeEventBusParameters: target } = pipe().Properties.TargetParameters;
      const [againstRecord, againstEnrichment] = entriesPutBy(target, eventRecord, detail);
      expect(againstRecord).toEqual(againstEnrichment);
      expect(againstRecord).toEqual({
        Source: 'messaging-api',
        DetailType: 'Messaging API event',
        Detail: { ...storedEvent, user_id: 'user_1' },
      });
      // The path the pipe had (issue 26): the event type in the enrichment's output, nothing in the stream record.
      const [oldAgainstRecord, oldAgainstEnrichment] = entriesPutBy({ ...target, DetailType: '$.type' }, eventRecord, detail);
      expect(oldAgainstEnrichment!.DetailType).toBe('attachment.created');
      expect(oldAgainstRecord!.DetailType).toBeUndefined();
    });

    it('delivers what the local forwarder POSTs: the same detail, detail-type and source for the same record', async () => {
      const [detail, ...rest] = await enrich([eventRecord]);
      expect(rest).toEqual([]);
      const { EventBridgeEventBusParameters: target } = pipe().Properties.TargetParameters;
      const [entry] = entriesPutBy(target, eventRecord, detail);
      const local = busEnvelope(eventRecord, { id: 'local', account: '000000000000', region: 'eu-west-1', at: new Date() });
      expect(detail).toEqual({ ...storedEvent, user_id: 'user_1' });
      expect(local.detail).toEqual(entry!.Detail);
      expect(local['detail-type']).toBe(entry!.DetailType);
      expect(local.source).toBe(entry!.Source);
    });

    it('enriches a batch in order, one detail per record, and fails the batch on an item it cannot read', async () => {
      const second = record('INSERT', 'e#000000000043', {
        user_id: { S: 'user_1' },
        event: { S: JSON.stringify({ ...storedEvent, id: 'evt_2', type: 'attachment.deleted' }) },
      });
      expect((await enrich([eventRecord, second])).map((detail) => detail.id)).toEqual([storedEvent.id, 'evt_2']);
      await expect(
        enrich([eventRecord, record('INSERT', 'e#000000000044', { user_id: { S: 'user_1' }, event: { S: '{not json' } })]),
      ).rejects.toThrow(/not JSON/);
      await expect(enrich([record('INSERT', 'e#000000000045', { event: { S: JSON.stringify(storedEvent) } })])).rejects.toThrow(/user_id/);
    });

    it('dead-letters what failed every retry to a queue kept 14 days, encrypted and TLS-only, and alarms on the first', () => {
      const queue = resourcesOf(template(), 'AWS::SQS::Queue')[queueId()]!;
      expect(queue.Properties).toMatchObject({ MessageRetentionPeriod: 14 * 24 * 3600, SqsManagedSseEnabled: true });
      const alarms = Object.values(resourcesOf(template(), 'AWS::CloudWatch::Alarm')).filter(
        ({ Properties }) =>
          JSON.stringify(Properties.Dimensions) === JSON.stringify([{ Name: 'QueueName', Value: getAtt(queueId(), 'QueueName') }]),
      );
      expect(alarms).toHaveLength(1);
      expect(alarms[0]!.Properties).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 1,
        EvaluationPeriods: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    });
  });

  describe('least privilege of the pipe', () => {
    const roleId = () => idOf('AWS::IAM::Role', 'OperatorEventsPipeRole');
    const statementsOf = (role: string) =>
      Object.values(resourcesOf(template(), 'AWS::IAM::Policy'))
        .filter(({ Properties }) => Properties.Roles.some((r: unknown) => JSON.stringify(r) === JSON.stringify({ Ref: role })))
        .flatMap(({ Properties }) => Properties.PolicyDocument.Statement)
        .map((statement) => ({ ...statement, Action: [statement.Action].flat() }));

    it('is assumed by EventBridge Pipes of this account only', () => {
      const role = resourcesOf(template(), 'AWS::IAM::Role')[roleId()]!.Properties;
      expect(role.AssumeRolePolicyDocument.Statement).toEqual([
        {
          Action: 'sts:AssumeRole',
          Effect: 'Allow',
          Principal: { Service: 'pipes.amazonaws.com' },
          Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
        },
      ]);
      expect(role.ManagedPolicyArns).toBeUndefined();
    });

    it('reads the events stream, invokes the enrichment, puts on the bus, dead-letters to its queue and logs, nothing else', () => {
      const granted = statementsOf(roleId()).map(({ Action, Resource, Effect }) => ({ Action: [...Action].sort(), Resource, Effect }));
      expect(granted).toEqual([
        {
          Action: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
          Resource: getAtt(eventsTableId(), 'StreamArn'),
          Effect: 'Allow',
        },
        // No resource-level permissions exist for it.
        { Action: ['dynamodb:ListStreams'], Resource: '*', Effect: 'Allow' },
        { Action: ['lambda:InvokeFunction'], Resource: getAtt(enrichmentId()), Effect: 'Allow' },
        { Action: ['events:PutEvents'], Resource: getAtt(busId()), Effect: 'Allow' },
        { Action: ['sqs:SendMessage'], Resource: getAtt(queueId()), Effect: 'Allow' },
        {
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: getAtt(idOf('AWS::Logs::LogGroup', 'OperatorEventsPipeLogs')),
          Effect: 'Allow',
        },
      ]);
    });

    it('gives the enrichment nothing but its own logs and tracing: it reads and writes no data', () => {
      const fn = resourcesOf(template(), 'AWS::Lambda::Function')[enrichmentId()]!.Properties;
      const actions = statementsOf(fn.Role['Fn::GetAtt'][0]).flatMap((statement) => statement.Action);
      expect(actions.sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents', 'xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    });
  });
}
