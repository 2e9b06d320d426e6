import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { loadOpenApi, OPENAPI_PATH, type OpenApiDocument } from '../../infra/local/openapi.js';
import type { Json } from './api.js';

/**
 * Checks a response received over HTTP against docs/openapi.yaml: the
 * operation exists (else the answer must be the gateway's route_not_found),
 * the status is documented, the required headers are there, and the JSON
 * body matches the documented schema. Returns what is wrong, if anything.
 */
export interface ReceivedResponse {
  status: number;
  headers: Headers;
  text: string;
}

const DOCUMENT_ID = 'https://messaging-api.local/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export class OpenApiContract {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly paths: { pattern: RegExp; template: string }[];

  constructor(readonly document: OpenApiDocument = loadOpenApi()) {
    addFormats.default(this.ajv);
    // OpenAPI's own schema keyword (deprecated in 3.1, still valid), and the document's top-level
    // fields, so that the document itself can be the root that schema pointers resolve in while
    // the schemas inside stay checked strictly.
    for (const keyword of ['example', ...Object.keys(document).filter((key) => key !== '$schema')]) this.ajv.addKeyword(keyword);
    this.ajv.addSchema(document, DOCUMENT_ID);
    this.paths = Object.keys(document.paths).map((template) => ({ template, pattern: templatePattern(template) }));
  }

  /** Every (METHOD, path template) the document describes, OPTIONS included. */
  operations(): { method: string; path: string; operation: Json }[] {
    return Object.entries(this.document.paths as Record<string, Json>).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({ method: method.toUpperCase(), path, operation: item[method] })),
    );
  }

  check(method: string, url: string, response: ReceivedResponse): string[] {
    const path = new URL(url, 'http://localhost').pathname;
    if (path === OPENAPI_PATH) return [];
    const template = this.paths.find((candidate) => candidate.pattern.test(path))?.template;
    const operationPointer = template && `/paths/${pointerToken(template)}/${method.toLowerCase()}`;
    if (!template || !this.document.paths[template][method.toLowerCase()]) {
      return this.checkBody('/components/schemas/Error', response, 'an undocumented route').concat(
        response.status === 404 && this.parse(response)?.error?.code === 'route_not_found'
          ? []
          : [`${method} ${path} is not in the document, yet the answer was ${response.status}, not 404 route_not_found`],
      );
    }
    const responsePointer = `${operationPointer}/responses/${response.status}`;
    const documented = this.resolve(responsePointer);
    if (!documented) return [`${method} ${template} answered ${response.status}, which the document does not list`];
    const where = `${method} ${template} ${response.status}`;
    const problems: string[] = [];
    for (const [name, header] of Object.entries((documented.value.headers ?? {}) as Record<string, Json>)) {
      const definition = header.$ref ? this.resolve(header.$ref.slice(1))!.value : header;
      const value = response.headers.get(name);
      if (value === null) {
        if (definition.required) problems.push(`${where}: header ${name} is required but missing`);
        continue;
      }
      const schemaPointer = header.$ref ? `${header.$ref.slice(1)}/schema` : `${documented.pointer}/headers/${pointerToken(name)}/schema`;
      const validate = this.validator(schemaPointer);
      if (!validate(value)) problems.push(`${where}: header ${name}: ${this.ajv.errorsText(validate.errors)}`);
    }
    const content = documented.value.content as Record<string, unknown> | undefined;
    if (!content) {
      if (response.text !== '') problems.push(`${where}: the document says no body, got ${response.text.slice(0, 200)}`);
      return problems;
    }
    if (!(response.headers.get('content-type') ?? '').startsWith('application/json')) {
      problems.push(`${where}: content-type ${response.headers.get('content-type')} is not application/json`);
    }
    return problems.concat(this.checkBody(`${documented.pointer}/content/application~1json/schema`, response, where));
  }

  private checkBody(schemaPointer: string, response: ReceivedResponse, where: string): string[] {
    const body = this.parse(response);
    if (body === undefined) return [`${where}: body is not JSON: ${response.text.slice(0, 200)}`];
    const validate = this.validator(schemaPointer);
    return validate(body)
      ? []
      : [`${where}: body ${this.ajv.errorsText(validate.errors, { dataVar: 'body' })}: ${response.text.slice(0, 500)}`];
  }

  private parse(response: ReceivedResponse): Json {
    try {
      return JSON.parse(response.text);
    } catch {
      return undefined;
    }
  }

  /** The object at a JSON pointer, following a $ref there (responses and headers are often references). */
  private resolve(pointer: string): { pointer: string; value: Json } | undefined {
    let value: Json = this.document;
    for (const token of pointer.split('/').slice(1)) {
      value = value?.[token.replaceAll('~1', '/').replaceAll('~0', '~')];
      if (value === undefined) return undefined;
    }
    if (value && typeof value.$ref === 'string') return this.resolve(value.$ref.slice(1));
    return { pointer, value };
  }

  /** A validator for the schema at this JSON pointer of the document. */
  validator(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      this.validators.set(pointer, validate);
    }
    return validate;
  }
}

const pointerToken = (token: string) => token.replaceAll('~', '~0').replaceAll('/', '~1');

function templatePattern(template: string): RegExp {
  const source = template
    .split('/')
    .map((segment) => (/^\{.+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}
