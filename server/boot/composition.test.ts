import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/*
 * The composition root stays the one place that builds and finds services: only server/boot/ reads the process's
 * slot (`processServices`, `installProcessServices`), the Next.js adapter reaches it through one entry
 * (server/boot/next-entry.ts), and the code below boot is handed its services. And server/http/ (low-level
 * helpers) and server/api/ meet one way only: the entry adapters (server/entry/) use both.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SEARCHED = ['app', 'server', 'lib', 'components', 'cli', 'agent', 'test', 'bench', 'scripts'];
const SKIPPED = new Set(['node_modules', 'generated']);
const SLOT_READERS = new Set(['processServices', 'installProcessServices']);
const NEXT_ENTRY = 'server/boot/next-entry.ts';

interface Import {
  file: string;
  line: number;
  /** The repository file it names (relative and `@/` imports), else the specifier. */
  target: string;
  names: string[];
  typeOnly: boolean;
}

function files(dir: string): string[] {
  if (!existsSync(path.join(ROOT, dir))) return [];
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : files(rel);
    return /\.(ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [rel] : [];
  });
}

function resolve(from: string, specifier: string): string {
  const base = specifier.startsWith('@/')
    ? specifier.slice(2)
    : specifier.startsWith('.')
      ? path.posix.join(path.posix.dirname(from), specifier)
      : null;
  if (base === null) return specifier;
  const found = ['', '.ts', '.tsx', '/index.ts']
    .map((ext) => base + ext)
    .find((f) => existsSync(path.join(ROOT, f)) && statSync(path.join(ROOT, f)).isFile());
  return path.posix.normalize(found ?? base);
}

/** The static imports and re-exports of `file` (with the names they bind), and its dynamic imports. */
function importsOf(file: string, source = readFileSync(path.join(ROOT, file), 'utf8')): Import[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: Import[] = [];
  const add = (node: ts.Node, literal: ts.Node | undefined, names: string[], typeOnly: boolean) => {
    if (!literal || !ts.isStringLiteralLike(literal)) return;
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
    found.push({ file, line, target: resolve(file, literal.text), names, typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      const bindings = node.importClause?.namedBindings;
      const names = bindings && ts.isNamedImports(bindings) ? bindings.elements.map((e) => (e.propertyName ?? e.name).text) : ['*'];
      add(node, node.moduleSpecifier, names, !!node.importClause?.isTypeOnly);
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      add(
        node,
        node.moduleSpecifier,
        clause && ts.isNamedExports(clause) ? clause.elements.map((e) => (e.propertyName ?? e.name).text) : ['*'],
        node.isTypeOnly,
      );
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], ['*'], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

const where = (i: Import) => `${i.file}:${i.line} -> ${i.target}`;
const isTest = (file: string) => /\.test\.tsx?$/.test(file);
const under = (file: string, ...dirs: string[]) => dirs.some((dir) => file.startsWith(`${dir}/`));

describe('the composition root', () => {
  const all = SEARCHED.flatMap(files).flatMap((file) => importsOf(file));

  it('finds the imports', () => {
    expect(all.some((i) => i.file === 'server/boot/http-server.ts' && i.target === 'server/boot/services.ts')).toBe(true);
  });

  it('is the only reader of the process slot: nothing outside server/boot imports processServices', () => {
    const readers = all.filter(
      (i) =>
        !under(i.file, 'server/boot') && i.target === 'server/boot/services.ts' && i.names.some((n) => n === '*' || SLOT_READERS.has(n)),
    );
    expect(readers.map(where)).toEqual([]);
  });

  it('is reached from app/ through its one Next.js entry only', () => {
    const other = all.filter((i) => under(i.file, 'app') && under(i.target, 'server/boot') && i.target !== NEXT_ENTRY);
    expect(other.map(where)).toEqual([]);
    expect(all.some((i) => under(i.file, 'app') && i.target === NEXT_ENTRY)).toBe(true);
  });

  it('hands services down: the API, auth, webhooks and the HTTP layers import nothing of server/boot', () => {
    const upward = all.filter(
      (i) =>
        !isTest(i.file) &&
        under(i.file, 'server/api', 'server/auth', 'server/webhooks', 'server/http', 'server/entry') &&
        under(i.target, 'server/boot'),
    );
    expect(upward.map(where)).toEqual([]);
  });

  it('keeps server/http and server/api one way: the helpers import neither the API nor the entry adapters', () => {
    const back = all.filter(
      (i) =>
        !isTest(i.file) &&
        ((under(i.file, 'server/http') && under(i.target, 'server/api', 'server/entry')) ||
          (under(i.file, 'server/api') && under(i.target, 'server/entry'))),
    );
    expect(back.map(where)).toEqual([]);
  });

  it('sees a forbidden import where one is written', () => {
    const planted = importsOf('server/api/x.ts', "import { processServices as p } from '../boot/services';\nexport const x = p;\n");
    expect(planted).toMatchObject([{ line: 1, target: 'server/boot/services.ts', names: ['processServices'] }]);
  });
});
