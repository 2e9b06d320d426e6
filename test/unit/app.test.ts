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
    const app = newApp();
    const build = vi.fn(() => ({ built: true }));
    const part: Part<{ built: boolean }> = (a) => build.call(a);
    expect(build).not.toHaveBeenCalled();
    expect(app.use(part)).toBe(app.use(part));
    expect(build).toHaveBeenCalledTimes(1);
  });

  it('builds each adapter once, whichever service asks for it', () => {
    const app = newApp();
    const store = app.use(attachmentStore);
    const files = app.use(fileStore);
    for (const service of [app.use(attachments), app.use(attachmentUploads), app.use(attachmentLeftovers), app.use(sessionLeftovers)]) {
      expect(Object.values(service)).toContain(store);
    }
    expect(Object.values(app.use(attachmentUploads))).toContain(app.use(attachments));
    for (const service of [app.use(attachmentUploads), app.use(attachmentLeftovers), app.use(sessionLeftovers)]) {
      expect(Object.values(service)).toContain(files);
    }
  });

  it('closes what it built when destroyed, once, and builds anew after', () => {
    const app = newApp();
    const close = vi.fn();
    const part: Part<object> = (a) => a.closing({}, close);
    const first = app.use(part);
    const client = app.use(dynamo);
    const destroyClient = vi.spyOn(client, 'destroy');
    app.destroy();
    app.destroy();
    expect(close).toHaveBeenCalledTimes(1);
    expect(close).toHaveBeenCalledWith(first);
    expect(destroyClient).toHaveBeenCalledTimes(1);
    expect(app.use(part)).not.toBe(first);
  });
});
