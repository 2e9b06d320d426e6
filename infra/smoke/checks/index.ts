import type { Check } from '../check.js';
import { unauthenticated } from './authentication.js';
import { createConversation } from './conversation.js';
import { corsPreflight } from './cors.js';
import { eventFeed } from './events.js';
import { fileCors } from './file-cors.js';
import { isolation } from './isolation.js';
import { sharing } from './sharing.js';
import { sizeGuard } from './size-guard.js';
import { uploadAndDownload } from './upload.js';
import { uploadSession } from './upload-session.js';

/**
 * The checks in the order they run; the cleanup follows them whatever
 * happened. Sharing runs after isolation: the file it shares is one the
 * second user must see; the feed after the uploads it looks for.
 */
export const checks: readonly Check[] = [
  createConversation,
  uploadAndDownload,
  uploadSession,
  isolation,
  sharing,
  eventFeed,
  sizeGuard,
  corsPreflight,
  fileCors,
  unauthenticated,
];
