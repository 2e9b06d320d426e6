import { startS3 } from '../infra/local/s3.js';
import { readConfig } from '../shared/config.js';
import { announceReady } from './processes.js';

// The S3 stand-in for the bench, with the files bucket, in a process of its own.
const s3 = await startS3('127.0.0.1', readConfig(process.env).filesBucket, {
  accessKeyId: process.env.AWS_ACCESS_KEY_ID!,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY!,
});
announceReady({ endpoint: s3.endpoint }, s3.close);
