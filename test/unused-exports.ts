import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { resolveSpecifier, sourceFiles } from './layering';

/**
 * Exported names that no other file imports: dead code, or a name that should not be exported. ESLint sees
 * one file at a time, so this reads the whole tree's syntax (the same files and resolution as the layering
 * check). Tests, e2e specs and scripts count as users. Re-exports (`export … from`) use the names they pass on;
 * `import * as`, `export * from` and a dynamic `import()` use every export of their module.
 *
 * Exempt: the exports Next reads by convention from app/ (pages, layouts, route handlers, their `metadata`,
 * `dynamic` and the like) and proxy.ts, and the default export of tool configuration files. A module a tool
 * configuration names by path for the tool to load (vitest's `globalSetup`) counts as used whole, like a
 * dynamic `import()` of it.
 */

/** Configuration keys whose string values are paths of modules the tool loads (and reads exports of). */
const TOOL_LOADED_MODULE_KEYS = new Set(['globalSetup']);

const isToolConfigFile = (file: string) => /^(next|vitest|playwright|prisma)\.config\.ts$/.test(file);

/** Files whose exports a framework or tool reads by name. */
const isConventionFile = (file: string) =>
  (/^app\//.test(file) && /\/(page|layout|route|not-found|error|loading|template|default|global-error)\.tsx?$/.test(file)) ||
  /^app\/(sitemap|robots|manifest|icon|opengraph-image)\.tsx?$/.test(file) ||
  file === 'proxy.ts' ||
  isToolConfigFile(file);

interface UnusedExport {
  file: string;
  name: string;
  line: number;
}

interface FileFacts {
  exports: Map<string, number>;
  /** Names this file imports, per target file; `*` for all of them. */
  uses: Map<string, Set<string>>;
}

function factsOf(root: string, file: string): FileFacts {
  const source = readFileSync(path.join(root, file), 'utf8');
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : file.endsWith('.mjs') ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, kind);
  const exports = new Map<string, number>();
  const uses = new Map<string, Set<string>>();
  const lineOf = (node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  const use = (specifier: ts.Expression | undefined, names: string[]) => {
    if (!specifier || !ts.isStringLiteralLike(specifier)) return;
    const target = resolveSpecifier(root, file, specifier.text);
    const set = uses.get(target) ?? new Set<string>();
    for (const name of names) set.add(name);
    uses.set(target, set);
  };
  const isExported = (node: ts.Node) =>
    ts.canHaveModifiers(node) && !!ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const isDefault = (node: ts.Node) =>
    ts.canHaveModifiers(node) && !!ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);

  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) use(node.arguments[0], ['*']);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const qualifier = node.qualifier && (ts.isIdentifier(node.qualifier) ? node.qualifier.text : node.qualifier.left.getText(sf));
      use(node.argument.literal, [qualifier ?? '*']);
    }
    ts.forEachChild(node, visit);
  };
  // `globalSetup: ['./test/global-setup.ts']` (or one string): the tool imports that module by its path.
  const visitConfig = (node: ts.Node) => {
    if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && TOOL_LOADED_MODULE_KEYS.has(node.name.text)) {
      const values = ts.isArrayLiteralExpression(node.initializer) ? [...node.initializer.elements] : [node.initializer];
      for (const value of values) if (ts.isStringLiteralLike(value)) use(value, ['*']);
    }
    ts.forEachChild(node, visitConfig);
  };

  for (const statement of sf.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const names: string[] = [];
      if (clause?.name) names.push('default');
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.push('*');
      if (bindings && ts.isNamedImports(bindings)) for (const e of bindings.elements) names.push((e.propertyName ?? e.name).text);
      use(statement.moduleSpecifier, names);
    } else if (ts.isExportDeclaration(statement)) {
      const clause = statement.exportClause;
      if (statement.moduleSpecifier) {
        if (!clause || ts.isNamespaceExport(clause)) use(statement.moduleSpecifier, ['*']);
        else
          use(
            statement.moduleSpecifier,
            clause.elements.map((e) => (e.propertyName ?? e.name).text),
          );
      }
      if (clause && ts.isNamedExports(clause)) for (const e of clause.elements) exports.set(e.name.text, lineOf(e));
      else if (clause) exports.set(clause.name.text, lineOf(clause));
    } else if (ts.isExportAssignment(statement)) {
      exports.set('default', lineOf(statement));
    } else if (isExported(statement)) {
      if (isDefault(statement)) exports.set('default', lineOf(statement));
      else if (ts.isVariableStatement(statement)) {
        for (const d of statement.declarationList.declarations) {
          if (ts.isIdentifier(d.name)) exports.set(d.name.text, lineOf(d));
        }
      } else if ('name' in statement && statement.name && ts.isIdentifier(statement.name as ts.Node)) {
        exports.set((statement.name as ts.Identifier).text, lineOf(statement));
      }
    }
  }
  // import() expressions and types can sit anywhere; only a file that writes one needs the whole tree walked.
  if (/\bimport\s*\(/.test(source)) sf.statements.forEach(visit);
  if (isToolConfigFile(file)) sf.statements.forEach(visitConfig);
  return { exports, uses };
}

/** Every exported name of the tree that no other file imports, in file order. */
export function findUnusedExports(root: string): UnusedExport[] {
  const files = [...sourceFiles(root), ...mjsFiles(root)];
  const facts = new Map(files.map((file) => [file, factsOf(root, file)]));
  const used = new Map<string, Set<string>>();
  for (const [, { uses }] of facts) {
    for (const [imported, names] of uses) {
      // A .mjs module's types live beside it in a .d.mts; an import of one uses the other.
      const target =
        imported.endsWith('.mjs') && facts.has(imported.replace(/\.mjs$/, '.d.mts')) ? imported.replace(/\.mjs$/, '.d.mts') : imported;
      const set = used.get(target) ?? new Set<string>();
      for (const name of names) set.add(name);
      used.set(target, set);
    }
  }
  const unused: UnusedExport[] = [];
  for (const [file, { exports }] of facts) {
    if (isConventionFile(file) || file.endsWith('.mjs') || file.endsWith('.d.mts')) continue;
    const names = used.get(file);
    if (names?.has('*')) continue;
    for (const [name, line] of exports) if (!names?.has(name)) unused.push({ file, name, line });
  }
  return unused;
}

/** The .mjs entry points and scripts, which import TypeScript modules through tsx. */
function mjsFiles(root: string): string[] {
  return ['bin', 'scripts', 'server'].flatMap((dir) => listMjs(root, dir));
}

function listMjs(root: string, dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory() && entry.name !== 'generated') found.push(...listMjs(root, rel));
    else if (entry.name.endsWith('.mjs')) found.push(rel);
  }
  return found;
}
