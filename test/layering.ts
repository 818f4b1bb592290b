import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * The layering of the tree (docs/architecture.md "The layers"), checked from every TS/TSX file's imports:
 * static imports, `export … from`, dynamic `import()` and `import('…')` types, with `@/` aliases and relative
 * paths resolved to files.
 *
 * - `protocol/` (the wire shared by agent and server) imports no other layer of ours and no framework.
 * - `agent/` and `server/` meet only in `protocol/`: neither imports the other, nor the console.
 * - `server/` (outside `server/api/`) imports no next/*, @trpc/* or react: adapters live in server/api and app.
 * - `components/` and `lib/` use `server/` for types only.
 * - Client code (a `'use client'` file and everything it imports as values) never reaches a server-only
 *   module: anything under `server/` or a file with `import 'server-only'`. The npm package `server-only` is
 *   not installed, so this check is what keeps server modules out of the browser bundle.
 *
 * - An attestor is named only in its own files and the registry: a file under `server/join/attestors/<name>/`, or
 *   a single-file attestor `server/join/attestors/<name>.ts`, is imported only from that attestor's own files and
 *   from `server/join/attestors/index.ts`. The other files directly in `server/join/attestors/` are the seam
 *   ({@link ATTESTOR_SEAM}: the interface, its hooks, the registry, what every attestor shares) and anyone may
 *   import them. Tests are not exempt: a test outside an attestor reaches it through the registry too.
 *
 * Test files (`*.test.ts`, `*.test.tsx`) are exempt from the directions between protocol/, agent/, server/
 * and cli/ only: they are where the two ends of a wire meet (a server test drives the real agent or the CLI's
 * stream reader; an agent test builds a real PKI with the server's code). Every other rule holds for them.
 */

interface ImportEdge {
  /** The importing file, relative to the root (POSIX). */
  file: string;
  line: number;
  specifier: string;
  /** The file it resolves to (relative to the root), or the bare package specifier. */
  target: string;
  /** Whether the import vanishes at run time (`import type`, all-`type` specifiers, `import('…')` types). */
  typeOnly: boolean;
}

interface Exception {
  file: string;
  target: string;
  reason: string;
}

/**
 * Imports that break a rule on purpose. Keep this tiny, and give each a reason.
 */
const EXCEPTIONS: Exception[] = [
  {
    file: 'server/boot/http-server.ts',
    target: 'next',
    reason: 'the process entry starts Next behind its own front server (a dynamic import, after the port is bound)',
  },
];

const SKIPPED = new Set(['node_modules', '.git', '.next', '.data', '.build', '.cache', 'dist', 'test-results', 'generated']);
const SOURCE = /\.(ts|tsx|mts)$/;
const EXTENSIONS = ['', '.ts', '.tsx', '.mts', '.js', '.mjs', '/index.ts', '/index.tsx'];

/** Every TS/TSX file under `root` (relative POSIX paths), skipping dependencies, build output and generated code. */
export function sourceFiles(root: string, dir = ''): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!SKIPPED.has(entry.name) && !entry.name.startsWith('.')) found.push(...sourceFiles(root, rel));
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      found.push(rel);
    }
  }
  return found.sort();
}

export function resolveSpecifier(root: string, from: string, specifier: string): string {
  let base: string;
  if (specifier.startsWith('@/')) base = specifier.slice(2);
  else if (specifier.startsWith('.')) base = path.posix.join(path.posix.dirname(from), specifier);
  else return specifier;
  const candidates = [...EXTENSIONS.map((ext) => base + ext), base.replace(/\.js$/, '.ts')];
  const found = candidates.find((file) => existsSync(path.join(root, file)) && statSync(path.join(root, file)).isFile());
  // An unresolved local import is reported by the typechecker; here it keeps its written path.
  return path.posix.normalize(found ?? base);
}

interface Parsed {
  edges: ImportEdge[];
  isClient: boolean;
  isServerOnly: boolean;
}

/** The imports of one file, from its syntax tree (comments and strings cannot fake or hide one). */
export function parseImports(root: string, file: string, source = readFileSync(path.join(root, file), 'utf8')): Parsed {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, kind);
  const edges: ImportEdge[] = [];
  let isServerOnly = false;
  const add = (node: ts.Node, literal: ts.Expression | undefined, typeOnly: boolean) => {
    if (!literal || !ts.isStringLiteralLike(literal)) return;
    const specifier = literal.text;
    if (specifier === 'server-only') isServerOnly = true;
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    edges.push({ file, line, specifier, target: resolveSpecifier(root, file, specifier), typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const allTypeSpecifiers =
        !!clause &&
        !clause.name &&
        !!named &&
        ts.isNamedImports(named) &&
        named.elements.length > 0 &&
        named.elements.every((e) => e.isTypeOnly);
      add(node, node.moduleSpecifier, !!clause && (clause.isTypeOnly || allTypeSpecifiers));
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      const allTypeSpecifiers =
        !!clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
      add(node, node.moduleSpecifier, node.isTypeOnly || allTypeSpecifiers);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal, true);
    }
    if (hasImportExpression) ts.forEachChild(node, visit);
  };
  // Declarations are top-level statements; only a file that writes `import(` needs the whole tree walked.
  const hasImportExpression = /\bimport\s*\(/.test(source);
  sf.statements.forEach(visit);
  const first = sf.statements[0];
  const isClient =
    !!first && ts.isExpressionStatement(first) && ts.isStringLiteral(first.expression) && first.expression.text === 'use client';
  return { edges, isClient, isServerOnly };
}

const layerOf = (file: string) => file.split('/')[0]!;
const isTest = (file: string) => /\.test\.tsx?$/.test(file);
const packageOf = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
/** `server/join/attestors/<name>.test.ts`: the own test of a single-file attestor. */
const isOwnTest = (file: string, attestor: string) => file === `${ATTESTORS}${attestor}.test.ts`;
const isLocal = (edge: ImportEdge) => edge.specifier.startsWith('.') || edge.specifier.startsWith('@/');

const FRAMEWORKS = ['next', 'react', 'react-dom', '@trpc/server', '@trpc/client', '@trpc/tanstack-react-query', '@tanstack/react-query'];
const PRISMA = ['@prisma/client', '@prisma/adapter-pg', 'prisma'];

const ATTESTORS = 'server/join/attestors/';
/** The files directly in server/join/attestors/ that are the seam, not an attestor. */
const ATTESTOR_SEAM = ['index.ts', 'registry.ts', 'types.ts', 'hooks.ts', 'names.ts', 'sealed-token.ts', 'token-roles.ts'];

/** The attestor a file belongs to (`tpm` for `server/join/attestors/tpm/…`, `fake` for `…/fake.ts`), or undefined. */
function attestorOf(file: string): string | undefined {
  if (!file.startsWith(ATTESTORS)) return undefined;
  const [first, ...rest] = file.slice(ATTESTORS.length).split('/');
  if (rest.length) return first;
  if (ATTESTOR_SEAM.includes(first!) || isTest(file)) return undefined;
  return first!.replace(/\.(ts|tsx|mts)$/, '');
}

/** The rule an import breaks, or undefined. */
function brokenRule(edge: ImportEdge): string | undefined {
  const from = layerOf(edge.file);
  if (!isLocal(edge)) {
    const pkg = packageOf(edge.specifier);
    if (from === 'protocol' && (FRAMEWORKS.includes(pkg) || PRISMA.includes(pkg))) return 'protocol/ imports no framework or Prisma';
    if (from === 'server' && !edge.file.startsWith('server/api/') && FRAMEWORKS.includes(pkg) && !pkg.startsWith('@tanstack'))
      return 'server/ (outside server/api) imports no next/*, @trpc/* or react';
    return undefined;
  }
  const attestor = attestorOf(edge.target);
  if (attestor && edge.file !== `${ATTESTORS}index.ts` && attestorOf(edge.file) !== attestor && !isOwnTest(edge.file, attestor))
    return `the ${attestor} attestor is imported only by its own files and the registry (server/join/attestors/index.ts)`;
  const to = layerOf(edge.target);
  const test = isTest(edge.file);
  if (from === 'protocol' && ['app', 'components', 'lib'].includes(to)) return `protocol/ imports nothing of ${to}/`;
  if (from === 'protocol' && ['server', 'agent', 'cli'].includes(to) && !test) return `protocol/ imports nothing of ${to}/`;
  if (from === 'agent' && ['app', 'components'].includes(to)) return `agent/ imports nothing of ${to}/`;
  if (from === 'agent' && to === 'server' && !test) return 'agent/ imports nothing of server/ (shared code lives in protocol/)';
  if (from === 'server' && ['app', 'components'].includes(to)) return `server/ imports nothing of ${to}/`;
  if (from === 'server' && to === 'cli' && !test) return 'server/ imports nothing of cli/';
  if (from === 'server' && to === 'agent' && !test) return 'server/ imports nothing of agent/ (shared code lives in protocol/)';
  if ((from === 'components' || from === 'lib') && to === 'server' && !edge.typeOnly)
    return `${from}/ imports server/ for types only (import type)`;
  return undefined;
}

/** Every import that breaks a rule, as `file:line imports 'specifier': rule`, exceptions left out. */
export function findLayeringViolations(root: string, exceptions: Exception[] = EXCEPTIONS): string[] {
  const parsed = new Map<string, Parsed>();
  for (const file of sourceFiles(root)) parsed.set(file, parseImports(root, file));
  const excepted = (file: string, target: string) => exceptions.some((e) => e.file === file && e.target === target);
  const violations: string[] = [];
  for (const { edges } of parsed.values()) {
    for (const edge of edges) {
      const rule = brokenRule(edge);
      if (rule && !excepted(edge.file, edge.target)) violations.push(`${edge.file}:${edge.line} imports '${edge.specifier}': ${rule}`);
    }
  }
  violations.push(...clientReachingServer(parsed, excepted));
  return violations;
}

/**
 * Walks the value imports from every `'use client'` file; names each import through which a walk reaches a
 * server-only module, once, with the chain from the first client file that reached it.
 */
function clientReachingServer(parsed: Map<string, Parsed>, excepted: (file: string, target: string) => boolean): string[] {
  const isServerOnly = (file: string) => layerOf(file) === 'server' || !!parsed.get(file)?.isServerOnly;
  const found = new Map<string, string>();
  for (const [entry, { isClient }] of parsed) {
    if (!isClient) continue;
    const via = new Map<string, string | null>([[entry, null]]);
    const queue = [entry];
    while (queue.length > 0) {
      const file = queue.shift()!;
      for (const edge of parsed.get(file)?.edges ?? []) {
        if (edge.typeOnly || !isLocal(edge) || via.has(edge.target) || !parsed.has(edge.target)) continue;
        if (excepted(edge.file, edge.target)) continue;
        via.set(edge.target, file);
        if (isServerOnly(edge.target)) {
          const chain: string[] = [];
          for (let at: string | null = file; at !== null; at = via.get(at) ?? null) chain.unshift(at);
          const where = `${edge.file}:${edge.line} imports '${edge.specifier}'`;
          if (!found.has(where)) found.set(where, `${where}: client code (${chain.join(' → ')}) reaches server-only ${edge.target}`);
          continue;
        }
        queue.push(edge.target);
      }
    }
  }
  return [...found.values()];
}
