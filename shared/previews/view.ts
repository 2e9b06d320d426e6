import type { FileLinks } from '../files/model.js';
import type { FileAccess } from '../scanning/model.js';
import { type PreviewRecord, type PreviewView, previewObject, statusAlone } from './model.js';

/**
 * The preview as a reader's response shows it: each thumbnail with a link
 * minted now (never stored), to whoever may read the attachment. One place,
 * so that what a reader may see of it is decided here: scanning's `access`
 * (shared/scanning/model.ts) holds a file not yet clean to its status alone
 * from everyone but its uploader, and shows no preview of an infected one.
 */
export async function previewView(
  preview: PreviewRecord | undefined,
  links: Pick<FileLinks, 'thumbnail'>,
  access: FileAccess,
): Promise<PreviewView | null> {
  const shown = previewObject(preview);
  if (!shown || access === 'none') return null;
  if (access === 'held') return { ...statusAlone(shown), thumbnails: [] };
  if (preview?.status !== 'ready') return { ...shown, thumbnails: [] };
  const thumbnails = await Promise.all(
    preview.thumbnails.map(async ({ width, height, key }) => {
      const link = await links.thumbnail(key);
      return { width, height, url: link.url, url_expires_at: link.expiresAt };
    }),
  );
  return { ...shown, thumbnails };
}
