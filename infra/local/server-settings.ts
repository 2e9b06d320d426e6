import { join, resolve } from 'node:path';
import type { Environment } from '../../shared/config.js';
import { REPOSITORY_ROOT } from '../declarations/repository.js';

/**
 * The local server's own settings (where it listens, where its data lives,
 * whether it consumes the tables' streams), read once from an environment as
 * `readConfig` reads the handlers' (docs/configuration.md).
 */
export interface LocalSettings {
  host: string;
  port: number;
  /** DATA_DIRECTORY: DynamoDB Local's and the S3 stand-in's data and the token secret; one server at a time (data-lock.ts). */
  dataDirectory: string;
  /** 0: a free port. */
  dynamodbPort: number;
  s3Port: number;
  /**
   * LOCAL_STREAM_CONSUMERS (`on` by default, or `off`): whether the server runs
   * what the stack's event source mappings run (the cleanup), on whatever
   * DynamoDB it talks to.
   */
  streamConsumers: boolean;
  /**
   * EVENTS_FORWARD_URL: where the server POSTs each new event as the
   * operators' event bus would deliver it (EventBridge's envelope), from the
   * events table's stream, retrying until a 2xx; unset: no forwarding.
   */
  eventsForwardUrl?: URL;
  /** LOCAL_SCAN_DELAY_MS: how long the scanner's stand-in takes from an object's creation to its result (default 1,000). */
  scanDelayMs: number;
}

export function readLocalSettings(env: Environment): LocalSettings {
  return {
    host: env.HOST || '127.0.0.1',
    port: port(env, 'PORT', 3000),
    dataDirectory: env.DATA_DIRECTORY ? resolve(env.DATA_DIRECTORY) : join(REPOSITORY_ROOT, '.data'),
    dynamodbPort: port(env, 'DYNAMODB_PORT', 0),
    s3Port: port(env, 'S3_PORT', 0),
    streamConsumers: onOrOff(env, 'LOCAL_STREAM_CONSUMERS', true),
    scanDelayMs: milliseconds(env, 'LOCAL_SCAN_DELAY_MS', 1000),
    ...(env.EVENTS_FORWARD_URL ? { eventsForwardUrl: httpUrl(env, 'EVENTS_FORWARD_URL') } : {}),
  };
}

function port(env: Environment, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65_535)
    throw new Error(`${name} must be a port from 0 to 65535, got ${JSON.stringify(raw)}`);
  return value;
}

function milliseconds(env: Environment, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number of milliseconds, got ${JSON.stringify(raw)}`);
  return value;
}

function onOrOff(env: Environment, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'on' || raw === 'off') return raw === 'on';
  throw new Error(`${name} must be on or off, got ${JSON.stringify(raw)}`);
}

function httpUrl(env: Environment, name: string): URL {
  const raw = env[name] ?? '';
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new Error(`${name} must be an http:// or https:// URL, got ${JSON.stringify(raw)}`);
  return url;
}
