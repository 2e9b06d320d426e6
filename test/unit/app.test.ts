import { describe, expect, it, vi } from 'vitest';
import {
  attachmentLeftovers,
  attachmentStore,
  attachments,
  attachmentUploads,
  Composition,
  dynamo,
  fileStore,
  type Part,
  sessionLeftovers,
} from '../../shared/app.js';
import { readConfig } from '../../shared/config.js';

const newApp = () => new Composition(readConfig({ DYNAMODB_ENDPOINT: 'http://127.0.0.1:1', S3_ENDPOINT: 'http://127.0.0.1:1' }));

describe('the Composition', () => {
  it('builds a part on first use only, and keeps it', () => {
    const composition = newApp();
    const build = vi.fn(() => ({ built: true }));
    const part: Part<{ built: boolean }> = (a) => build.call(a);
    expect(build).not.toHaveBeenCalled();
    expect(composition.use(part)).toBe(composition.use(part));
    expect(build).toHaveBeenCalledTimes(1);
  });

  it('builds each adapter once, whichever service asks for it', () => {
    const composition = newApp();
    const store = composition.use(attachmentStore);
    const files = composition.use(fileStore);
    for (const service of [
      composition.use(attachments),
      composition.use(attachmentUploads),
      composition.use(attachmentLeftovers),
      composition.use(sessionLeftovers),
    ]) {
      expect(Object.values(service)).toContain(store);
    }
    expect(Object.values(composition.use(attachmentUploads))).toContain(composition.use(attachments));
    for (const service of [composition.use(attachmentUploads), composition.use(attachmentLeftovers), composition.use(sessionLeftovers)]) {
      expect(Object.values(service)).toContain(files);
    }
  });

  it('closes what it built when destroyed, once, and builds anew after', () => {
    const composition = newApp();
    const close = vi.fn();
    const part: Part<object> = (a) => a.closing({}, close);
    const first = composition.use(part);
    const client = composition.use(dynamo);
    const destroyClient = vi.spyOn(client, 'destroy');
    composition.destroy();
    composition.destroy();
    expect(close).toHaveBeenCalledTimes(1);
    expect(close).toHaveBeenCalledWith(first);
    expect(destroyClient).toHaveBeenCalledTimes(1);
    expect(composition.use(part)).not.toBe(first);
  });
});
