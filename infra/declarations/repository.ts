import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: handler entries in shared/routes.ts are relative to it. */
export const REPOSITORY_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
