import type { FileLinks } from '../files/model.js';
import { type PreviewRecord, type PreviewView, previewObject } from './model.js';

/**
 * The preview as a reader's response shows it: each thumbnail with a link
 * minted now (never stored), to whoever may read the attachment. One place,
 * so that what a reader may see of it (scanning will hold a pending file's
 * thumbnails back from everyone but its uploader) is decided here.
 */
export async function previewView(preview: PreviewRecord | undefined, links: Pick<FileLinks, 'thumbnail'>): Promise<PreviewView | null> {
  const shown = previewObject(preview);
  if (!shown || preview?.status !== 'ready') return shown && { ...shown, thumbnails: [] };
  const thumbnails = await Promise.all(
    preview.thumbnails.map(async ({ width, height, key }) => {
      const link = await links.thumbnail(key);
      return { width, height, url: link.url, url_expires_at: link.expiresAt };
    }),
  );
  return { ...shown, thumbnails };
}
