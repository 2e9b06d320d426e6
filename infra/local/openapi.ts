import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPOSITORY_ROOT } from '../declarations/repository.js';

/** The API's OpenAPI document (docs/openapi.yaml), as the local server serves it and the tests check it. */
export const OPENAPI_FILE = join(REPOSITORY_ROOT, 'docs', 'openapi.yaml');
export const OPENAPI_PATH = '/openapi.json';

/** The parsed YAML, walked by key by the tests that check it (the server only serializes it). */
// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document; its shape is what test/unit/infra/openapi-document.test.ts checks
export type OpenApiDocument = Record<string, any>;

export function loadOpenApi(): OpenApiDocument {
  return parse(readFileSync(OPENAPI_FILE, 'utf8')) as OpenApiDocument;
}
