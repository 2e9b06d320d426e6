import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** The API's OpenAPI document (docs/openapi.yaml), as the local server serves it and the tests check it. */
export const OPENAPI_FILE = fileURLToPath(new URL('../../docs/openapi.yaml', import.meta.url));
export const OPENAPI_PATH = '/openapi.json';

export type OpenApiDocument = Record<string, any>;

export function loadOpenApi(): OpenApiDocument {
  return parse(readFileSync(OPENAPI_FILE, 'utf8')) as OpenApiDocument;
}
