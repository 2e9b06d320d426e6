import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT } from '../../infra/declarations/repository.js';

/**
 * The imports between the repository's own modules, from every file under
 * the given directories (or the given files) and whatever they reach, read with
 * TypeScript's parser: `import type` and `export ... from` count too, so a
 * cycle through types alone is caught as well.
 */
function importGraph(starts: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const pending = starts.flatMap((start) => (start.endsWith('.ts') ? [start] : sourcesUnder(join(REPOSITORY_ROOT, start))));
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (graph.has(file)) continue;
    const targets = importsOf(file);
    graph.set(file, targets);
    pending.push(...targets);
  }
  return graph;
}

function sourcesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => relative(REPOSITORY_ROOT, join(directory, name)));
}

function importsOf(file: string): string[] {
  const path = join(REPOSITORY_ROOT, file);
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest);
  const targets: string[] = [];
  const visit = (node: ts.Node) => {
    const specifier =
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier
        ? node.moduleSpecifier
        : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
          ? node.arguments[0]
          : undefined;
    if (specifier && ts.isStringLiteral(specifier) && specifier.text.startsWith('.')) {
      const target = resolve(dirname(path), specifier.text.replace(/\.js$/, '.ts'));
      if (!existsSync(target)) throw new Error(`${file} imports ${specifier.text}, which is not a TypeScript module of the repository`);
      targets.push(relative(REPOSITORY_ROOT, target));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return targets;
}

/** Every cycle's path, as found by a depth-first walk (one per back edge). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const walk = (module: string) => {
    path.push(module);
    for (const target of graph.get(module) ?? []) {
      const start = path.indexOf(target);
      if (start >= 0) cycles.push([...path.slice(start), target]);
      else if (!done.has(target)) walk(target);
    }
    path.pop();
    done.add(module);
  };
  for (const module of graph.keys()) if (!done.has(module)) walk(module);
  return cycles;
}

function reaches(graph: Map<string, string[]>, from: string, to: string): boolean {
  const seen = new Set<string>();
  const pending = [from];
  while (pending.length > 0) {
    const module = pending.pop()!;
    if (module === to) return true;
    if (seen.has(module)) continue;
    seen.add(module);
    pending.push(...(graph.get(module) ?? []));
  }
  return false;
}

describe('the import graph of shared/ and functions/', () => {
  const graph = importGraph(['shared', 'functions']);

  it('is read: the walk sees the handlers, the composition root and the route table', () => {
    expect(graph.get('functions/conversations/create.ts')).toEqual(
      expect.arrayContaining(['shared/app.ts', 'shared/routes.ts', 'shared/http/lambda.ts']),
    );
    expect(graph.get('shared/app.ts')).toContain('shared/idempotency/service.ts');
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c', 'a']]);
  });

  it('has no cycle', () => {
    expect(cyclesOf(graph).map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  it('keeps the HTTP pipeline and the idempotency service apart from the composition root, and the service apart from HTTP requests', () => {
    expect(reaches(graph, 'shared/http/handler.ts', 'shared/app.ts')).toBe(false);
    for (const http of ['shared/http/handler.ts', 'shared/http/request.ts', 'shared/http/idempotency.ts', 'shared/app.ts']) {
      expect(reaches(graph, 'shared/idempotency/service.ts', http), http).toBe(false);
    }
  });

  it('lets only the Lambda bindings import the composition root: the rest of shared/ is given what it needs', () => {
    const importers = [...graph].filter(([module, targets]) => module.startsWith('shared/') && targets.includes('shared/app.ts'));
    expect(importers.map(([module]) => module).sort()).toEqual([
      'shared/event-target.ts',
      'shared/http/lambda.ts',
      'shared/queue-consumer.ts',
      'shared/stream-consumer.ts',
    ]);
  });

  it('keeps the route table, which every function bundles, free of imports', () => {
    expect(graph.get('shared/routes.ts')).toEqual([]);
  });

  it('keeps the services, membership and the caller free of HTTP: they throw domain errors, which the pipeline answers', () => {
    const services = [...graph.keys()].filter(
      (module) =>
        /^shared\/[^/]+\/(service|uploads|leftovers)\.ts$/.test(module) ||
        module === 'shared/conversations/membership.ts' ||
        module === 'shared/caller.ts',
    );
    expect(services).toEqual(
      expect.arrayContaining([
        'shared/conversations/service.ts',
        'shared/attachments/service.ts',
        'shared/attachments/uploads.ts',
        'shared/attachments/leftovers.ts',
        'shared/uploads/service.ts',
        'shared/caller.ts',
      ]),
    );
    const intoHttp = services.flatMap((module) =>
      graph
        .get(module)!
        .filter((target) => target.startsWith('shared/http/'))
        .map((target) => `${module} → ${target}`),
    );
    expect(intoHttp).toEqual([]);
  });

  it('keeps the runtime out of infra/: no module of shared/ or functions/ reaches one under infra/', () => {
    const intoInfra = [...graph].flatMap(([module, targets]) =>
      targets.filter((target) => target.startsWith('infra/')).map((target) => `${module} → ${target}`),
    );
    expect(intoInfra).toEqual([]);
  });
});

/** What of the graph reaches a module under one of `directories`, as `module → target` edges. */
function edgesInto(graph: Map<string, string[]>, directories: string[]): string[] {
  return [...graph].flatMap(([module, targets]) =>
    targets.filter((target) => directories.some((directory) => target.startsWith(directory))).map((target) => `${module} → ${target}`),
  );
}

describe('the import graph of infra/ (docs/architecture.md, the layout)', () => {
  it('keeps the stack off the local AWS and the smoke suite: what it deploys never depends on how it is emulated or checked', () => {
    const stack = importGraph(['infra/cdk-app.ts', 'infra/stack']);
    expect(stack.get('infra/stack/constructs/functions.ts')).toEqual(expect.arrayContaining(['infra/declarations/permissions.ts']));
    expect(edgesInto(stack, ['infra/local/', 'infra/smoke/'])).toEqual([]);
  });

  it('keeps the declarations that the stack and the local AWS both read free of either, and of the smoke suite', () => {
    const declarations = importGraph(['infra/declarations']);
    expect(edgesInto(declarations, ['infra/stack/', 'infra/local/', 'infra/smoke/', 'infra/ops/'])).toEqual([]);
  });
});
