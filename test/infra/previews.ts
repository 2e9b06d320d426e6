import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { PREVIEW_MEMORY_MB, previewFunction } from '../../infra/declarations/function-settings.js';
import { PREVIEW_BATCH_SIZE, PREVIEW_DELIVERIES, PREVIEW_TIMEOUT_SECONDS } from '../../shared/previews/delivery.js';
import { resourcesOf, type Synthesized } from './synth.js';

const functionId = (template: Template, name: string) => {
  const ids = Object.keys(resourcesOf(template, 'AWS::Lambda::Function')).filter((id) =>
    new RegExp(`^Functions${name}[0-9A-F]{8}$`).test(id),
  );
  expect(ids, name).toHaveLength(1);
  return ids[0]!;
};

/**
 * The preview worker as synthesized (infra/stack/constructs/previews.ts and
 * functions.ts): its queue with redrive and alarm, its mapping, its memory,
 * and the fan-out that feeds it. Run by stack.test.ts on its template.
 */
export function previewTemplateTests(template: () => Template): void {
  describe('the preview worker', () => {
    it(`runs with ${PREVIEW_MEMORY_MB} MB for ${PREVIEW_TIMEOUT_SECONDS} s on arm64, its file size limit set, fed ${PREVIEW_BATCH_SIZE} request at a time with partial batch failures`, () => {
      const id = functionId(template(), previewFunction.name);
      const worker = resourcesOf(template(), 'AWS::Lambda::Function')[id]!.Properties;
      expect(worker).toMatchObject({ MemorySize: PREVIEW_MEMORY_MB, Timeout: PREVIEW_TIMEOUT_SECONDS, Architectures: ['arm64'] });
      expect(worker.Environment.Variables.PREVIEW_MAX_BYTES).toBe(String(100 * 1024 * 1024));
      const mappings = Object.values(resourcesOf(template(), 'AWS::Lambda::EventSourceMapping')).filter(
        ({ Properties }) => Properties.FunctionName.Ref === id,
      );
      expect(mappings).toHaveLength(1);
      expect(mappings[0]!.Properties).toMatchObject({ BatchSize: PREVIEW_BATCH_SIZE, FunctionResponseTypes: ['ReportBatchItemFailures'] });
    });

    it(`reads a queue that hands a request to its dead letters after ${PREVIEW_DELIVERIES} deliveries, hidden for longer than the worker runs, with an alarm on the first dead letter`, () => {
      const queues = resourcesOf(template(), 'AWS::SQS::Queue');
      const [requestsId, requests] = Object.entries(queues).find(([id]) => id.startsWith('FunctionsPreviewRequests'))!;
      expect(requests.Properties.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsPreviewsDeadLetters/), 'Arn'] },
        maxReceiveCount: PREVIEW_DELIVERIES,
      });
      expect(requests.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * PREVIEW_TIMEOUT_SECONDS);
      const alarms = Object.values(resourcesOf(template(), 'AWS::CloudWatch::Alarm')).filter(({ Properties }) =>
        JSON.stringify(Properties.Dimensions).includes('FunctionsPreviewsDeadLetters'),
      );
      expect(alarms).toHaveLength(1);
      // The fan-out is told where to send, and may send there (and nothing else may).
      const fanOut = resourcesOf(template(), 'AWS::Lambda::Function')[functionId(template(), 'FanOut')]!.Properties;
      expect(fanOut.Environment.Variables.PREVIEW_QUEUE_URL).toEqual({ Ref: requestsId });
      const senders = Object.values(resourcesOf(template(), 'AWS::IAM::Policy')).filter(({ Properties }) =>
        Properties.PolicyDocument.Statement.some(
          (statement: { Action: string | string[]; Resource: unknown }) =>
            [statement.Action].flat().includes('sqs:SendMessage') && JSON.stringify(statement.Resource).includes(requestsId),
        ),
      );
      expect(senders.map(({ Properties }) => Properties.Roles[0].Ref)).toEqual([expect.stringMatching(/^FunctionsFanOutRole/)]);
    });
  });
}

/**
 * The worker's asset holds sharp for the functions' platform, installed
 * without Docker: Linux's sharp and libvips for the synthesized architecture
 * (the host's, so that npm installs from its cache), and no other platform's.
 * The command for the deployed arm64 is bundling.test.ts's. Run by
 * sam.test.ts, the suite's one synth that bundles.
 */
export function previewAssetTests(synthesized: () => Synthesized): void {
  it('packages sharp with Linux’s libvips for the functions’ architecture beside the preview worker, and no other platform binary', () => {
    const { template, outdir } = synthesized();
    const worker = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, previewFunction.name)]!;
    const cpu = { arm64: 'arm64', x86_64: 'x64' }[worker.Properties.Architectures[0] as string];
    const directory = resolve(outdir, worker.Metadata!['aws:asset:path']);
    const platforms = readdirSync(join(directory, 'node_modules', '@img')).filter((name) => name.startsWith('sharp-'));
    expect(platforms.sort()).toEqual([`sharp-libvips-linux-${cpu}`, `sharp-linux-${cpu}`]);
    expect(readdirSync(join(directory, 'node_modules', '@img', `sharp-libvips-linux-${cpu}`, 'lib'))).toContainEqual(
      expect.stringMatching(/^libvips-cpp\.so\./),
    );
    expect(readdirSync(join(directory, 'node_modules', '@img', `sharp-linux-${cpu}`, 'lib'))).toContainEqual(
      expect.stringMatching(new RegExp(`^sharp-linux-${cpu}.*\\.node$`)),
    );
  });
}
