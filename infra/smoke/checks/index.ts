import type { Check } from '../check.js';
import { unauthenticated } from './authentication.js';
import { createConversation } from './conversation.js';
import { corsPreflight } from './cors.js';
import { fileCors } from './file-cors.js';
import { isolation } from './isolation.js';
import { sizeGuard } from './size-guard.js';
import { uploadAndDownload } from './upload.js';
import { uploadSession } from './upload-session.js';

/**
 * The checks in the order they run; the cleanup follows them whatever
 * happened. A check of a new feature (sharing a file with the second user,
 * the event feed) is one more entry here, once the feature exists.
 */
export const checks: readonly Check[] = [
  createConversation,
  uploadAndDownload,
  uploadSession,
  isolation,
  sizeGuard,
  corsPreflight,
  fileCors,
  unauthenticated,
];
