import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../../../infra/declarations/repository.js';
import { readLocalSettings } from '../../../../infra/local/server-settings.js';
import { streamsEndpoint, unusableStream } from '../../../../infra/local/stream-poller.js';

describe('readLocalSettings', () => {
  it('defaults to 127.0.0.1:3000, .data of the checkout, free backend ports and stream consumers on', () => {
    expect(readLocalSettings({})).toEqual({
      host: '127.0.0.1',
      port: 3000,
      dataDirectory: join(REPOSITORY_ROOT, '.data'),
      dynamodbPort: 0,
      s3Port: 0,
      streamConsumers: true,
      scanDelayMs: 1000,
    });
  });

  it('reads each setting, a relative DATA_DIRECTORY against the working directory', () => {
    expect(
      readLocalSettings({
        HOST: '0.0.0.0',
        PORT: '3101',
        DATA_DIRECTORY: 'elsewhere',
        DYNAMODB_PORT: '8000',
        S3_PORT: '4568',
        LOCAL_STREAM_CONSUMERS: 'off',
        LOCAL_SCAN_DELAY_MS: '0',
      }),
    ).toEqual({
      host: '0.0.0.0',
      port: 3101,
      dataDirectory: resolve('elsewhere'),
      dynamodbPort: 8000,
      s3Port: 4568,
      streamConsumers: false,
      scanDelayMs: 0,
    });
    expect(readLocalSettings({ LOCAL_STREAM_CONSUMERS: 'on' }).streamConsumers).toBe(true);
    expect(readLocalSettings({ EVENTS_FORWARD_URL: 'http://127.0.0.1:4000/events' }).eventsForwardUrl).toEqual(
      new URL('http://127.0.0.1:4000/events'),
    );
    expect(readLocalSettings({ EVENTS_FORWARD_URL: '' })).not.toHaveProperty('eventsForwardUrl');
  });

  it('refuses what it cannot read, naming the setting', () => {
    expect(() => readLocalSettings({ LOCAL_STREAM_CONSUMERS: 'no' })).toThrow('LOCAL_STREAM_CONSUMERS must be on or off, got "no"');
    expect(() => readLocalSettings({ PORT: 'http' })).toThrow('PORT must be a port from 0 to 65535, got "http"');
    expect(() => readLocalSettings({ S3_PORT: '70000' })).toThrow('S3_PORT must be a port');
    expect(() => readLocalSettings({ LOCAL_SCAN_DELAY_MS: '1s' })).toThrow(
      'LOCAL_SCAN_DELAY_MS must be a whole number of milliseconds, got "1s"',
    );
    expect(() => readLocalSettings({ EVENTS_FORWARD_URL: '127.0.0.1:4000' })).toThrow(
      'EVENTS_FORWARD_URL must be an http:// or https:// URL, got "127.0.0.1:4000"',
    );
    expect(() => readLocalSettings({ EVENTS_FORWARD_URL: 'ftp://receiver/events' })).toThrow(
      'EVENTS_FORWARD_URL must be an http:// or https:// URL',
    );
  });
});

describe('a stream someone else turned on', () => {
  it('feeds a handler that reads keys whatever its view type', () => {
    for (const view of ['KEYS_ONLY', 'NEW_IMAGE', 'OLD_IMAGE', 'NEW_AND_OLD_IMAGES'] as const) {
      expect(unusableStream('KEYS_ONLY', { StreamEnabled: true, StreamViewType: view })).toBeUndefined();
    }
  });

  it('feeds a handler that reads the removed item only when it carries it', () => {
    expect(unusableStream('OLD_IMAGE', { StreamEnabled: true, StreamViewType: 'OLD_IMAGE' })).toBeUndefined();
    expect(unusableStream('OLD_IMAGE', { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' })).toBeUndefined();
    for (const view of ['KEYS_ONLY', 'NEW_IMAGE'] as const) {
      expect(unusableStream('OLD_IMAGE', { StreamEnabled: true, StreamViewType: view })).toContain(
        `its stream is ${view}, without the removed item`,
      );
    }
  });

  it('feeds the events forwarder only when it carries the added item', () => {
    for (const view of ['NEW_IMAGE', 'NEW_AND_OLD_IMAGES'] as const)
      expect(unusableStream('NEW_IMAGE', { StreamEnabled: true, StreamViewType: view })).toBeUndefined();
    for (const view of ['KEYS_ONLY', 'OLD_IMAGE'] as const) {
      expect(unusableStream('NEW_IMAGE', { StreamEnabled: true, StreamViewType: view })).toContain(
        `its stream is ${view}, without the added item`,
      );
    }
  });

  it('is no stream when it is off or absent', () => {
    expect(unusableStream('KEYS_ONLY', undefined)).toContain('it has no stream (its definition asks for KEYS_ONLY)');
    expect(unusableStream('OLD_IMAGE', { StreamEnabled: false })).toContain('it has no stream');
  });
});

describe('streamsEndpoint', () => {
  it('is the DynamoDB endpoint itself for DynamoDB Local, wherever it runs', () => {
    for (const endpoint of ['http://127.0.0.1:8000', 'http://dynamodb-local:8000', 'http://host.docker.internal:8000']) {
      expect(streamsEndpoint(endpoint)).toBe(endpoint);
    }
  });

  it("is left to the SDK (streams.dynamodb.<region>) for AWS's own endpoints", () => {
    for (const endpoint of [
      'https://dynamodb.eu-west-1.amazonaws.com',
      'https://dynamodb.cn-north-1.amazonaws.com.cn',
      'https://dynamodb.us-east-1.api.aws',
    ]) {
      expect(streamsEndpoint(endpoint)).toBeUndefined();
    }
  });
});
