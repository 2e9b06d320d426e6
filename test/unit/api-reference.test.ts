import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Json } from '../support/api.js';

/**
 * docs/api.md (the reference in prose) and docs/openapi.yaml (the machine
 * document) describe the same API: every route, parameter, object field and
 * error code of the one is in the other. The conventions of docs/api.md that
 * make this checkable: one `### METHOD /path` heading per route, a table per
 * route whose first column is the parameter (`| Parameter | In | …`), a table
 * of fields per object, one errors table (`| Status | Type | Code | When |`).
 */
const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');
const reference = read('docs/api.md');
const document = parse(read('docs/openapi.yaml'));

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const ROUTE = /^(GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS) (\/\S*)$/;
const SNAKE_CASE = /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/;
/** The object tables of docs/api.md and the schema each stands for. */
const OBJECTS: Record<string, string> = {
  'The conversation object': 'Conversation',
  'The attachment object': 'Attachment',
  'The upload session object': 'UploadSessionWithParts',
  'The event object': 'Event',
};

// ---- docs/openapi.yaml ----

/** The node, or what its $ref points at in the same document. */
const resolver = (openapi: Json) => {
  const resolve = (node: Json): Json => {
    if (!node?.$ref) return node;
    return resolve(
      node.$ref
        .slice(2)
        .split('/')
        .reduce((value: Json, key: string) => value[key.replaceAll('~1', '/')], openapi),
    );
  };
  return resolve;
};

interface OpenApiFacts {
  /** `METHOD /path` of every operation, preflights included. */
  operations: Set<string>;
  /** Per operation, `in name` of every parameter and body field (`body name`). */
  parameters: Map<string, Set<string>>;
  /** `status code` of every error code each response documents, by the statuses it is answered with. */
  errors: Set<string>;
  codes: Set<string>;
  types: Set<string>;
  /** Every property name of every schema, and every enum value: what a code span may name. */
  names: Set<string>;
}

function openApiFacts(openapi: Json): OpenApiFacts {
  const resolve = resolver(openapi);
  const operations = new Set<string>();
  const parameters = new Map<string, Set<string>>();
  const responseStatuses = new Map<string, Set<string>>();
  for (const [path, item] of Object.entries<Json>(openapi.paths)) {
    for (const method of METHODS.filter((candidate) => item[candidate])) {
      const route = `${method.toUpperCase()} ${path}`;
      const operation = item[method];
      operations.add(route);
      const names = new Set<string>();
      for (const parameter of [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(resolve))
        names.add(`${parameter.in} ${parameter.name}`);
      for (const media of Object.values<Json>(operation.requestBody?.content ?? {})) {
        for (const field of Object.keys(resolve(media.schema).properties ?? {})) names.add(`body ${field}`);
      }
      parameters.set(route, names);
      for (const [status, response] of Object.entries<Json>(operation.responses)) {
        if (!response.$ref) continue;
        const statuses = responseStatuses.get(response.$ref) ?? new Set<string>();
        responseStatuses.set(response.$ref, statuses.add(status));
      }
    }
  }
  const error = openapi.components.schemas.Error.properties.error.properties;
  const codes = new Set<string>(error.code.enum);
  const types = new Set<string>(error.type.enum);
  const errors = new Set<string>();
  for (const [ref, statuses] of responseStatuses) {
    const response = resolve({ $ref: ref });
    const named = [...String(response.description).matchAll(/`([^`]+)`/g)]
      .map((match) => match[1]!)
      .filter((name) => SNAKE_CASE.test(name));
    const example = response.content?.['application/json']?.example?.error?.code;
    for (const code of [...named, ...(example ? [example] : [])]) for (const status of statuses) errors.add(`${status} ${code}`);
  }
  const names = new Set<string>();
  const visit = (node: Json) => {
    if (!node || typeof node !== 'object') return;
    if (node.properties) for (const name of Object.keys(node.properties)) names.add(name);
    if (Array.isArray(node.enum)) for (const value of node.enum) names.add(String(value));
    for (const child of Object.values(node)) visit(child);
  };
  visit(openapi.components.schemas);
  for (const parameterNames of parameters.values()) for (const name of parameterNames) names.add(name.split(' ')[1]!);
  return { operations, parameters, errors, codes, types, names };
}

// ---- docs/api.md ----

interface Section {
  level: number;
  heading: string;
  lines: string[];
}

interface ReferenceFacts {
  /** The `### METHOD /path` headings. */
  routeHeadings: string[];
  /** Per route heading, `in name` of every row of its parameter tables. */
  parameters: Map<string, string[]>;
  /** Per object heading, the fields of its table. */
  fields: Map<string, string[]>;
  /** `status code` of every row of the errors table, and each row's type. */
  errors: string[];
  types: string[];
  codeSpans: string[];
}

function referenceFacts(markdown: string): ReferenceFacts {
  // Fenced blocks are examples, not names: they would also confuse the code spans.
  const text = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  const sections: Section[] = [];
  for (const line of text.split('\n')) {
    const heading = /^(#{1,3}) (.*)$/.exec(line);
    if (heading) sections.push({ level: heading[1]!.length, heading: heading[2]!, lines: [] });
    else sections.at(-1)?.lines.push(line);
  }
  const facts: ReferenceFacts = { routeHeadings: [], parameters: new Map(), fields: new Map(), errors: [], types: [], codeSpans: [] };
  for (const { level, heading, lines } of sections) {
    const isRoute = level === 3 && ROUTE.test(heading);
    if (isRoute) facts.routeHeadings.push(heading);
    for (const table of tablesOf(lines)) {
      const [kind] = table.header;
      if (kind === 'Parameter') {
        expect(isRoute, `a parameter table outside a route section: ${heading}`).toBe(true);
        const rows = facts.parameters.get(heading) ?? [];
        facts.parameters.set(heading, rows.concat(table.rows.map((row) => `${row[1]} ${codeSpan(row[0]!)}`)));
      } else if (kind === 'Field' && OBJECTS[heading]) {
        facts.fields.set(
          heading,
          table.rows.map((row) => codeSpan(row[0]!)),
        );
      } else if (kind === 'Status') {
        for (const [status, type, code] of table.rows) {
          facts.errors.push(`${status} ${codeSpan(code!)}`);
          facts.types.push(codeSpan(type!));
        }
      }
    }
  }
  facts.codeSpans = [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
  return facts;
}

function tablesOf(lines: string[]): { header: string[]; rows: string[][] }[] {
  const tables: { header: string[]; rows: string[][] }[] = [];
  let current: { header: string[]; rows: string[][] } | undefined;
  for (const line of lines) {
    if (!line.startsWith('|')) {
      current = undefined;
      continue;
    }
    const cells = line
      .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
      .split('|')
      .map((cell) => cell.trim());
    if (!current) {
      current = { header: cells, rows: [] };
      tables.push(current);
    } else if (!cells.every((cell) => /^:?-+:?$/.test(cell))) current.rows.push(cells);
  }
  return tables;
}

/** The name in a cell that must hold exactly one code span. */
function codeSpan(cell: string): string {
  const match = /^`([^`]+)`$/.exec(cell);
  return match ? match[1]! : `(not one code span: ${cell})`;
}

// ---- the comparison ----

const sorted = (values: Iterable<string>) => [...values].sort();
const minus = (a: Iterable<string>, b: Iterable<string>) => {
  const other = new Set(b);
  return sorted([...a].filter((value) => !other.has(value)));
};

/** What differs between the two documents, as sentences; empty when they agree. */
function differences(markdown: string, openapi: Json): string[] {
  const api = openApiFacts(openapi);
  const ref = referenceFacts(markdown);
  const problems: string[] = [];
  const report = (what: string, values: string[]) => {
    if (values.length > 0) problems.push(`${what}: ${values.join(', ')}`);
  };

  const routes = sorted([...api.operations].filter((operation) => !operation.startsWith('OPTIONS ')));
  report('routes without a section in docs/api.md', minus(routes, ref.routeHeadings));
  report('route sections docs/api.md has and the OpenAPI document does not', minus(ref.routeHeadings, routes));
  report(
    'route headings given twice',
    ref.routeHeadings.filter((route, index) => ref.routeHeadings.indexOf(route) !== index),
  );
  const spannedRoutes = ref.codeSpans.flatMap((span) => {
    const match = ROUTE.exec(span);
    return match ? [`${match[1]} ${match[2]!.split('?')[0]}`] : [];
  });
  report('routes named in docs/api.md that the OpenAPI document lacks', minus(new Set(spannedRoutes), api.operations));
  report(
    'preflights docs/api.md never names',
    minus(
      [...api.operations].filter((operation) => operation.startsWith('OPTIONS ')),
      spannedRoutes,
    ),
  );

  for (const route of routes) {
    const documented = api.parameters.get(route) ?? new Set();
    const described = ref.parameters.get(route) ?? [];
    report(`${route}: parameters missing from docs/api.md`, minus(documented, described));
    report(`${route}: parameters in docs/api.md the OpenAPI document lacks`, minus(described, documented));
  }

  for (const [heading, schema] of Object.entries(OBJECTS)) {
    const properties = Object.keys(openapi.components.schemas[schema].properties);
    const fields = ref.fields.get(heading) ?? [];
    report(`${heading}: fields missing from docs/api.md`, minus(properties, fields));
    report(`${heading}: fields in docs/api.md the ${schema} schema lacks`, minus(fields, properties));
  }

  report(
    'error codes the OpenAPI document names in a response but does not list in Error.code',
    minus(
      [...api.errors].map((pair) => pair.split(' ')[1]!),
      api.codes,
    ),
  );
  report(
    'error codes of Error.code that no response documents',
    minus(
      api.codes,
      [...api.errors].map((pair) => pair.split(' ')[1]!),
    ),
  );
  report('errors (status code) missing from the errors table of docs/api.md', minus(api.errors, ref.errors));
  report('errors (status code) in docs/api.md the OpenAPI document lacks', minus(ref.errors, api.errors));
  report('error types of docs/api.md the OpenAPI document lacks', minus(new Set(ref.types), api.types));
  report('error types missing from docs/api.md', minus(api.types, ref.types));

  // Words of the spans, and whole spans for the values that are not one word (`attachment.created`).
  const spannedNames = new Set([...ref.codeSpans, ...ref.codeSpans.flatMap((span) => span.match(/[A-Za-z_][\w-]*/g) ?? [])]);
  report('schema fields docs/api.md never names', minus(api.names, spannedNames));
  report(
    'snake_case names in docs/api.md that are no field, parameter or error code of the OpenAPI document',
    minus(new Set(ref.codeSpans.filter((span) => SNAKE_CASE.test(span))), [...api.names, ...api.codes]),
  );
  return problems;
}

describe('docs/api.md', () => {
  it('says what docs/openapi.yaml says: routes, parameters, fields and error codes, both ways', () => {
    expect(differences(reference, document)).toEqual([]);
  });

  describe('the comparison notices', () => {
    const section = (heading: string) => new RegExp(`^### ${heading.replace(/[{}/]/g, '\\$&')}\\n[\\s\\S]*?(?=^##)`, 'm');

    it('a route whose section is removed', () => {
      const without = reference.replace(section('GET /v1/attachments'), '');
      expect(without).not.toBe(reference);
      expect(differences(without, document).join('\n')).toMatch(/routes without a section in docs\/api.md: GET \/v1\/attachments$/m);
    });

    it('a route the OpenAPI document does not have', () => {
      const extra = reference.replace('## Headers', '### PATCH /v1/attachments/{id}\n\nRenames.\n\n## Headers');
      expect(differences(extra, document).join('\n')).toMatch(/route sections docs\/api.md has and the OpenAPI document does not: PATCH/);
    });

    it('a bogus error code, in the table or in the prose', () => {
      const row = '| 400 | `invalid_request_error` | `parameter_bogus` | Never. |\n';
      const inTable = reference.replace(/^\| 401 \| `authentication_error` \| `token_missing`/m, `${row}$&`);
      expect(inTable).not.toBe(reference);
      expect(differences(inTable, document).join('\n')).toMatch(
        /errors \(status code\) in docs\/api.md the OpenAPI document lacks: 400 parameter_bogus/,
      );
      const inProse = reference.replace('## Headers', 'A stale token is 401 `token_stale`.\n\n## Headers');
      expect(differences(inProse, document).join('\n')).toMatch(/snake_case names .*: token_stale/);
    });

    it('an error code documented with another status', () => {
      const moved = reference.replace(
        '| 409 | `idempotency_error` | `idempotency_key_in_use`',
        '| 423 | `idempotency_error` | `idempotency_key_in_use`',
      );
      expect(moved).not.toBe(reference);
      expect(differences(moved, document).join('\n')).toMatch(/missing from the errors table of docs\/api.md: 409 idempotency_key_in_use/);
    });

    it('a parameter missing from a route, or one the route does not take', () => {
      const missing = reference.replace(/^\| `unread` \| query .*\n/m, '');
      expect(missing).not.toBe(reference);
      expect(differences(missing, document).join('\n')).toMatch(
        /GET \/v1\/conversations: parameters missing from docs\/api.md: query unread/,
      );
      const extra = reference.replace(/^\| `unread` \| query .*\n/m, '$&| `starred` | query | boolean | no | Starred only. |\n');
      expect(differences(extra, document).join('\n')).toMatch(
        /GET \/v1\/conversations: parameters in docs\/api.md the OpenAPI document lacks: query starred/,
      );
    });

    it('a parameter or field the OpenAPI document gains', () => {
      const gained = structuredClone(document);
      gained.components.schemas.AttachmentUpdate.properties.description = { type: 'string' };
      gained.components.schemas.Attachment.properties.thumbnail_url = { type: 'string' };
      const found = differences(reference, gained).join('\n');
      expect(found).toMatch(/PUT \/v1\/attachments\/\{id\}: parameters missing from docs\/api.md: body description/);
      expect(found).toMatch(/The attachment object: fields missing from docs\/api.md: thumbnail_url/);
    });

    it('an error code the OpenAPI document gains', () => {
      const gained = structuredClone(document);
      gained.components.schemas.Error.properties.error.properties.code.enum.push('quota_exceeded');
      gained.components.responses.NotFound.description += ' (`quota_exceeded`)';
      expect(differences(reference, gained).join('\n')).toMatch(/missing from the errors table of docs\/api.md: 404 quota_exceeded/);
    });
  });
});
