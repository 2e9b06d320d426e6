import type { Check } from '../check.js';
import { unauthenticated } from './authentication.js';
import { createConversation } from './conversation.js';
import { corsPreflight } from './cors.js';
import { fileCors } from './file-cors.js';
import { isolation } from './isolation.js';
import { sharing } from './sharing.js';
import { sizeGuard } from './size-guard.js';
import { uploadAndDownload } from './upload.js';
import { uploadSession } from './upload-session.js';

/**
 * The checks in the order they run; the cleanup follows them whatever
 * happened. A check of a new feature (the event feed) is one more entry
 * here, once the feature exists. Sharing runs after isolation: the file it
 * shares is one the second user must see.
 */
export const checks: readonly Check[] = [
  createConversation,
  uploadAndDownload,
  uploadSession,
  isolation,
  sharing,
  sizeGuard,
  corsPreflight,
  fileCors,
  unauthenticated,
];
