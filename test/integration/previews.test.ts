import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { PREVIEWS_PREFIX } from '../../shared/files/keys.js';
import { download, storedFileKeys, uploadForm } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { animatedGif, png, pngBombHeader, rotatedPhotoWithGps, SVG, truncatedJpeg } from '../support/images.js';
import { type Attachment, freshId, type Member, sharingApi, withoutLink } from '../support/sharing.js';
import { MIB, sessionClient } from '../support/upload-sessions.js';

/**
 * Previews (docs/api.md, "Previews"), over HTTP against the local server:
 * the upload answers `pending` for an image by its bytes, the fan-out queues
 * it, the worker (functions/preview.ts, on the local queue) settles it, and
 * every reader sees and is told.
 */
// Scanning off: this file is about previews, whose events here come in one order; how scanning holds a
// thumbnail back until clean, and its events beside the preview's, is scanning.test.ts's.
const s = sharingApi({ env: { SCANNING: 'off' } });

interface Thumbnail {
  width: number;
  height: number;
  url: string;
  url_expires_at: number;
}
interface Preview {
  status: 'pending' | 'ready' | 'failed';
  width: number | null;
  height: number | null;
  placeholder: string | null;
  thumbnails: Thumbnail[];
}

const image = (bytes: Buffer, filename = 'photo.jpg', type = 'image/jpeg') => ({ bytes, filename, type });

/** The attachment as `who` reads it once its preview is no longer pending. */
async function settled(who: Member, id: string): Promise<Attachment & { preview: Preview }> {
  const read = await eventually(
    () => s.attachment(who, id),
    (response) => response.status === 200 && response.body.preview?.status !== 'pending',
    30_000,
  );
  expect(read.status, read.text).toBe(200);
  expect(read.body.preview?.status, JSON.stringify(read.body.preview)).not.toBe('pending');
  return read.body;
}

const alone = () => ({ id: freshId('u') });

describe('an image upload', () => {
  it('answers pending, then shows the size as displayed (EXIF orientation), a placeholder and WebP thumbnails of 320 and 1024 px with no metadata', async () => {
    const me = alone();
    const uploaded = await s.upload(me, null, image(await rotatedPhotoWithGps(1200, 800)));
    expect(uploaded.preview).toEqual({ status: 'pending', width: null, height: null, placeholder: null, thumbnails: [] });

    const { preview } = await settled(me, uploaded.id);
    expect(preview).toMatchObject({ status: 'ready', width: 800, height: 1200 });
    expect(preview.placeholder).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(preview.placeholder!.length).toBeLessThanOrEqual(40);
    expect(preview.thumbnails.map(({ width, height }) => [width, height])).toEqual([
      [213, 320],
      [683, 1024],
    ]);
    for (const thumbnail of preview.thumbnails) {
      expect(thumbnail.url_expires_at).toBeGreaterThan(Date.now() / 1000);
      const fetched = await download(thumbnail.url);
      expect(fetched.status).toBe(200);
      expect(fetched.contentType).toBe('image/webp');
      expect(fetched.contentDisposition).toBe('inline');
      const metadata = await sharp(fetched.bytes).metadata();
      expect(metadata).toMatchObject({ format: 'webp', width: thumbnail.width, height: thumbnail.height });
      expect([metadata.exif, metadata.xmp, metadata.iptc, metadata.orientation, metadata.comments]).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
      expect(fetched.bytes.includes(Buffer.from('taken at home'))).toBe(false);
    }
  });

  it('never enlarges: an image of at most 320 px has one rendition of its own size', async () => {
    const me = alone();
    const uploaded = await s.upload(me, null, image(await png(200, 120), 'small.png', 'image/png'));
    const { preview } = await settled(me, uploaded.id);
    expect(preview).toMatchObject({ status: 'ready', width: 200, height: 120 });
    expect(preview.thumbnails.map(({ width, height }) => [width, height])).toEqual([[200, 120]]);
  });

  it('gives an animated GIF its first frame', async () => {
    const me = alone();
    const uploaded = await s.upload(me, null, image(await animatedGif(60, 40), 'wave.gif', 'image/gif'));
    const { preview } = await settled(me, uploaded.id);
    expect(preview).toMatchObject({ status: 'ready', width: 60, height: 40 });
    const fetched = await download(preview.thumbnails[0]!.url);
    const { data } = await sharp(fetched.bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    // The first frame is red: WebP's lossy colours stay near it, far from the second frame's blue.
    expect(data[0]).toBeGreaterThan(200);
    expect(data[2]).toBeLessThan(60);
  });

  it('decides by the bytes: a PNG named report.txt and typed text/plain is previewed', async () => {
    const me = alone();
    const uploaded = await s.upload(me, null, { bytes: await png(50, 50), filename: 'report.txt', type: 'text/plain' });
    expect(uploaded.preview).toMatchObject({ status: 'pending' });
    expect((await settled(me, uploaded.id)).preview.status).toBe('ready');
  });

  it('is made for a file uploaded through an upload session too', async () => {
    const me = alone();
    const sessions = sessionClient(s.t());
    const bytes = await rotatedPhotoWithGps(640, 480);
    const started = await sessions.start(me.id, { filename: 'big.jpg', file_size: bytes.length, file_type: 'image/jpeg' });
    expect(started.status, started.text).toBe(201);
    const parts = await sessions.uploadAll(me.id, started.body, bytes);
    const completed = await sessions.complete(me.id, started.body.id, parts);
    expect(completed.status, completed.text).toBe(201);
    expect(completed.body.preview).toMatchObject({ status: 'pending' });
    const { preview } = await settled(me, completed.body.id);
    expect(preview).toMatchObject({ status: 'ready', width: 480, height: 640 });
    expect(MIB).toBeGreaterThan(bytes.length);
  });
});

describe('no preview, or a failed one', () => {
  it.each([
    ['an SVG, typed image/svg+xml', { bytes: SVG, filename: 'logo.svg', type: 'image/svg+xml' }],
    ['text named photo.jpg and typed image/jpeg', { bytes: Buffer.from('not a photo at all'), filename: 'photo.jpg', type: 'image/jpeg' }],
    ['a PDF', { bytes: Buffer.from('%PDF-1.7\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n'), filename: 'doc.pdf', type: 'application/pdf' }],
  ])('%s has preview null', async (_, file) => {
    const me = alone();
    const uploaded = await s.upload(me, null, file);
    expect(uploaded.preview).toBeNull();
    expect((await s.attachment(me, uploaded.id)).body.preview).toBeNull();
  });

  it.each([
    ['a truncated JPEG', async () => image(await truncatedJpeg())],
    ['a PNG whose header claims 400 megapixels', async () => image(pngBombHeader(), 'bomb.png', 'image/png')],
    [
      'bytes that start as a JPEG and are not one',
      async () => image(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 7)])),
    ],
  ])('%s is failed, with no size, placeholder or thumbnail, and no thumbnail stored', async (_, make) => {
    const me = alone();
    const uploaded = await s.upload(me, null, await make());
    expect(uploaded.preview).toMatchObject({ status: 'pending' });
    const { preview } = await settled(me, uploaded.id);
    expect(preview).toEqual({ status: 'failed', width: null, height: null, placeholder: null, thumbnails: [] });
    const thumbnails = await storedFileKeys(s.t().api.s3Endpoint, s.t().api.config.filesBucket, PREVIEWS_PREFIX);
    expect(thumbnails.filter((key) => key.includes(uploaded.id))).toEqual([]);
  });
});

describe('every reader', () => {
  it('is told once with attachment.updated (previous_attributes.preview), sees the thumbnails, and the preview moves no activity', async () => {
    const [a, b] = [{ id: freshId('a') }, { id: freshId('b') }];
    const sideA = (await s.openSide(a, { contact_id: b.id })).body;
    const sideB = (await s.openSide(b, { contact_id: a.id })).body;
    const uploaded = await s.upload(a, sideA.id, image(await png(400, 300), 'shot.png', 'image/png'));
    const seenByB = await settled(b, uploaded.id);
    expect(seenByB.preview.thumbnails.map(({ width }) => width)).toEqual([320, 400]);
    expect((await download(seenByB.preview.thumbnails[1]!.url)).status).toBe(200);

    const pending = { status: 'pending', width: null, height: null, placeholder: null, thumbnails: [] };
    const shown = (attachment: Attachment & { preview: Preview }) => ({
      ...withoutLink(attachment),
      preview: { ...attachment.preview, thumbnails: attachment.preview.thumbnails.map(({ width, height }) => ({ width, height })) },
    });
    const updatedIn = async (who: Member, view: Attachment & { preview: Preview }) => {
      const feed = await s.feedOf(who, (events) => events.some((event) => event.type === 'attachment.updated'));
      const updates = feed.filter((event) => event.type === 'attachment.updated');
      expect(updates).toHaveLength(1);
      expect(updates[0]!.data).toEqual({ object: shown(view), previous_attributes: { preview: pending } });
      expect(updates[0]!.request_id).toBeNull();
      return feed;
    };
    await updatedIn(a, await settled(a, uploaded.id));
    const feedB = await updatedIn(b, seenByB);
    // The upload moved B's side once (conversation.updated); the preview moved nothing more.
    expect(feedB.filter((event) => event.type === 'conversation.updated')).toHaveLength(1);
    expect((await s.conversation(b, sideB.id)).last_active_at).toBe(uploaded.created_at);

    // A later rename reports the name alone: the unchanged preview is no change.
    const renamed = await s.call(a, 'PUT', `/v1/attachments/${uploaded.id}`, { form: { filename: 'renamed.png' } });
    expect(renamed.status, renamed.text).toBe(200);
    const afterRename = await s.feedOf(a, (events) => events.filter((event) => event.type === 'attachment.updated').length === 2);
    expect(afterRename.filter((event) => event.type === 'attachment.updated').at(-1)!.data.previous_attributes).toEqual({
      filename: 'shot.png',
    });
  });

  // Each of these routes signs with its own role (docs/architecture.md, "Local IAM"): its links must download.
  it('finds working thumbnail links in every answer that shows a ready image: list, rename, and the replays of an upload and a completion', async () => {
    const me = alone();
    const thumbnailsDownload = async (attachment: Attachment & { preview: Preview }, where: string) => {
      expect(attachment.preview.thumbnails.length, where).toBeGreaterThan(0);
      for (const { url } of attachment.preview.thumbnails) expect((await download(url)).status, where).toBe(200);
    };
    const key = { 'idempotency-key': freshId('thumbs') };
    const file = image(await png(400, 300), 'keyed.png', 'image/png');
    const posted = await s.call(me, 'POST', '/v1/attachments', { body: uploadForm(file, {}), headers: key });
    expect(posted.status, posted.text).toBe(201);
    await settled(me, posted.body.id);
    const replayed = await s.call(me, 'POST', '/v1/attachments', { body: uploadForm(file, {}), headers: key });
    expect(replayed.status, replayed.text).toBe(201);
    await thumbnailsDownload(replayed.body, 'upload replayed');

    const listed = (await s.list(me)).data.find(({ id }) => id === posted.body.id) as Attachment & { preview: Preview };
    await thumbnailsDownload(listed, 'list');
    const renamed = await s.call(me, 'PUT', `/v1/attachments/${posted.body.id}`, { form: { filename: 'renamed.png' } });
    expect(renamed.status, renamed.text).toBe(200);
    await thumbnailsDownload(renamed.body, 'rename');

    const sessions = sessionClient(s.t());
    const bytes = await png(500, 400);
    const started = await sessions.start(me.id, { filename: 'session.png', file_size: bytes.length, file_type: 'image/png' });
    expect(started.status, started.text).toBe(201);
    const parts = await sessions.uploadAll(me.id, started.body, bytes);
    const completeKey = { 'idempotency-key': freshId('complete') };
    const completed = await sessions.complete(me.id, started.body.id, parts, completeKey);
    expect(completed.status, completed.text).toBe(201);
    await settled(me, completed.body.id);
    const completedAgain = await sessions.complete(me.id, started.body.id, parts, completeKey);
    expect(completedAgain.status, completedAgain.text).toBe(201);
    await thumbnailsDownload(completedAgain.body, 'completion replayed');
  });

  it('after a delete, the thumbnails are gone from storage and their links stop working', async () => {
    const me = alone();
    const uploaded = await s.upload(me, null, image(await png(500, 500), 'gone.png', 'image/png'));
    const { preview } = await settled(me, uploaded.id);
    expect((await download(preview.thumbnails[0]!.url)).status).toBe(200);
    const deleted = await s.call(me, 'DELETE', `/v1/attachments/${uploaded.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    const { s3Endpoint, config } = s.t().api;
    const left = await eventually(
      () => storedFileKeys(s3Endpoint, config.filesBucket, PREVIEWS_PREFIX),
      (keys) => !keys.some((key) => key.includes(uploaded.id)),
    );
    expect(left.filter((key) => key.includes(uploaded.id))).toEqual([]);
    for (const thumbnail of preview.thumbnails) expect((await download(thumbnail.url)).status).not.toBe(200);
  });
});
