import ts from 'typescript';

/**
 * Finds the hand-written SQL in TypeScript sources, statically, with the compiler's checker (which resolves a
 * constant through imports): what `test/sql-check.test.ts` PREPAREs against the migrated schema
 * (docs/decisions/typed-sql.md). The forms:
 *
 * - node-postgres: `x.query(text, …)` and `x.query({ text, … })` where `query` is pg's;
 * - Prisma: `$queryRaw`/`$executeRaw` tagged templates (a `${value}` becomes `$n`; a `${Prisma.sql`…`}`,
 *   `Prisma.empty` or `Prisma.raw(constant)` is inlined) and `$queryRawUnsafe`/`$executeRawUnsafe` strings;
 * - Kysely: `sql` tagged templates (`${value}` and `${eb.ref(…)}` become `$n`; `sql.raw`/`sql.lit` of constants
 *   and nested `sql` templates are inlined). A template that is not a whole statement is a fragment, checked
 *   as `SELECT <fragment>`: it names no column in its text (columns come in as `eb.ref`, which the builder
 *   types), so a bare column name fails the check.
 *
 * The text is a constant string, a template of constants, or a `+` of them. Anything else (a text built at run
 * time, a conditional fragment) is "unchecked", with the reason, so the test can refuse it.
 */
type SqlKind = 'pg' | 'prisma' | 'kysely';

interface SqlSite {
  file: string;
  line: number;
  kind: SqlKind;
}

export interface FoundSql extends SqlSite {
  text: string;
  /** A Kysely `sql` template that is an expression, not a statement. */
  fragment: boolean;
}

export interface UncheckedSql extends SqlSite {
  why: string;
  source: string;
}

class Dynamic extends Error {}

const STATEMENT =
  /^\s*(?:--[^\n]*\n\s*)*\(?\s*(select|insert|update|delete|with|values|merge|table|begin|commit|rollback|savepoint|release|set|listen|unlisten|notify|lock|create|alter|drop|do|show|deallocate|explain|vacuum|analyze|truncate|copy)\b/i;

/** Whether `text` starts like a whole statement (else a Kysely fragment). */
const isStatement = (text: string) => STATEMENT.test(text);

/** A program over `files` with the project's options, for {@link extractSql}. */
export function programOf(files: string[], options: ts.CompilerOptions = {}, host?: ts.CompilerHost): ts.Program {
  const compilerOptions: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    esModuleInterop: true,
    skipLibCheck: true,
    strict: true,
    noEmit: true,
    ...options,
  };
  return ts.createProgram({ rootNames: files, options: compilerOptions, host });
}

/** Every SQL statement and fragment in `files` (paths as given to the program), and what could not be read. */
export function extractSql(program: ts.Program, files: string[], relative: (file: string) => string = (f) => f) {
  const checker = program.getTypeChecker();
  const found: FoundSql[] = [];
  const unchecked: UncheckedSql[] = [];

  const declaredIn = (node: ts.Node, test: (file: string) => boolean): boolean => {
    let symbol = checker.getSymbolAtLocation(node);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    return !!symbol?.declarations?.some((d) => test(d.getSourceFile().fileName));
  };
  const fromKysely = (node: ts.Node) => declaredIn(node, (f) => /\/node_modules\/kysely\//.test(f));
  const fromPg = (node: ts.Node) => declaredIn(node, (f) => /\/node_modules\/(@types\/pg|pg)\//.test(f));

  /** The constant initializer an identifier or property access names, if it is one. */
  const constantOf = (node: ts.Expression): ts.Expression | undefined => {
    let symbol = checker.getSymbolAtLocation(ts.isPropertyAccessExpression(node) ? node.name : node);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const decl = symbol?.valueDeclaration;
    if (decl && ts.isVariableDeclaration(decl) && decl.initializer && ts.getCombinedNodeFlags(decl) & ts.NodeFlags.Const)
      return decl.initializer;
    if (decl && ts.isPropertyAssignment(decl)) return decl.initializer;
    return undefined;
  };

  const unwrap = (node: ts.Expression): ts.Expression =>
    ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node) || ts.isNonNullExpression(node)
      ? unwrap(node.expression)
      : node;

  /** The constant string `node` is, or Dynamic. */
  const stringOf = (input: ts.Expression): string => {
    const node = unwrap(input);
    if (ts.isStringLiteralLike(node)) return node.text;
    if (ts.isNumericLiteral(node)) return node.text;
    if (ts.isTemplateExpression(node))
      return node.head.text + node.templateSpans.map((s) => stringOf(s.expression) + s.literal.text).join('');
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken)
      return stringOf(node.left) + stringOf(node.right);
    if (ts.isIdentifier(node) || ts.isPropertyAccessExpression(node)) {
      const init = constantOf(node);
      if (init) return stringOf(init);
    }
    // A number spliced into the text (a window in seconds): any number reads the same schema.
    if (checker.getTypeAtLocation(node).flags & ts.TypeFlags.NumberLike) return '0';
    throw new Dynamic(`not a constant string: ${node.getText().slice(0, 80)}`);
  };

  const isPrismaTag = (tag: ts.Expression) =>
    ts.isPropertyAccessExpression(tag) && tag.name.text === 'sql' && tag.expression.getText() === 'Prisma';
  const isKyselySqlTag = (tag: ts.Expression) => ts.isIdentifier(tag) && tag.text === 'sql' && fromKysely(tag);

  /**
   * A substitution of a tagged template: inlined when it is SQL text itself, else the next `$n`. In a Kysely
   * template a column reference (`sql.ref`, `eb.ref`) or another builder expression is typed by the builder
   * and stands where a value could: it is checked as a parameter of the same place.
   */
  const substitution = (input: ts.Expression, next: () => string, kysely: boolean): string => {
    const node = unwrap(input);
    if (ts.isTaggedTemplateExpression(node) && (isPrismaTag(node.tag) || isKyselySqlTag(node.tag)))
      return templateText(node.template, next, kysely);
    if (ts.isPropertyAccessExpression(node) && node.getText() === 'Prisma.empty') return '';
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const callee = node.expression.getText();
      const arg = node.arguments[0];
      if ((callee === 'Prisma.raw' || callee === 'sql.raw' || callee === 'sql.lit') && arg) return stringOf(arg);
    }
    if (ts.isConditionalExpression(node) && (isSqlValued(node.whenTrue) || isSqlValued(node.whenFalse)))
      throw new Dynamic(`a conditional fragment: ${node.getText().slice(0, 80)}`);
    if (ts.isIdentifier(node) || ts.isPropertyAccessExpression(node)) {
      const init = constantOf(node);
      if (init && isSqlValued(unwrap(init)) && ts.isTaggedTemplateExpression(unwrap(init))) return substitution(init, next, kysely);
    }
    if (isSqlValued(node) && !kysely) throw new Dynamic(`a fragment built at run time: ${node.getText().slice(0, 80)}`);
    return next();
  };

  /** Whether an expression's value is SQL (a Prisma.Sql or a Kysely expression) rather than a parameter. */
  const isSqlValued = (node: ts.Expression): boolean => {
    const type = checker.getTypeAtLocation(node);
    const name = (type.aliasSymbol ?? type.getSymbol())?.getName() ?? '';
    return /^(Sql|RawBuilder|RawBuilderImpl|Expression|ExpressionWrapper|AliasedRawBuilder)$/.test(name);
  };

  const templateText = (template: ts.TemplateLiteral, next: () => string, kysely: boolean): string =>
    ts.isNoSubstitutionTemplateLiteral(template)
      ? template.text
      : template.head.text + template.templateSpans.map((s) => substitution(s.expression, next, kysely) + s.literal.text).join('');

  const numbered = () => {
    let n = 0;
    return () => `$${++n}`;
  };

  for (const fileName of files) {
    const sf = program.getSourceFile(fileName);
    if (!sf) throw new Error(`${fileName} is not in the program`);
    const site = (node: ts.Node, kind: SqlKind): SqlSite => ({
      file: relative(fileName),
      line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1,
      kind,
    });
    const record = (node: ts.Node, kind: SqlKind, read: () => string, fragmentAllowed = false) => {
      try {
        const text = read();
        const fragment = fragmentAllowed && !isStatement(text);
        found.push({ ...site(node, kind), text, fragment });
      } catch (error) {
        if (!(error instanceof Dynamic)) throw error;
        unchecked.push({ ...site(node, kind), why: error.message, source: node.getText().slice(0, 200) });
      }
    };

    const visit = (node: ts.Node): void => {
      if (ts.isTaggedTemplateExpression(node)) {
        const tag = node.tag;
        if (ts.isPropertyAccessExpression(tag) && (tag.name.text === '$queryRaw' || tag.name.text === '$executeRaw')) {
          record(node, 'prisma', () => templateText(node.template, numbered(), false));
        } else if (isKyselySqlTag(tag) && !insideSqlTemplate(node)) {
          record(node, 'kysely', () => templateText(node.template, numbered(), true), true);
        }
      } else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
        const name = node.expression.name.text;
        const first = node.arguments[0];
        if ((name === '$queryRawUnsafe' || name === '$executeRawUnsafe') && first) {
          record(node, 'prisma', () => stringOf(first));
        } else if (name === 'query' && first && fromPg(node.expression.name)) {
          record(node, 'pg', () => {
            const arg = unwrap(first);
            if (!ts.isObjectLiteralExpression(arg)) return stringOf(arg);
            const text = arg.properties.find((p) => p.name?.getText() === 'text');
            if (!text || !ts.isPropertyAssignment(text)) throw new Dynamic('a query config without a `text` property');
            return stringOf(text.initializer);
          });
        } else if (node.expression.getText() === 'sql.raw' && first && fromKysely(node.expression.expression) && !insideSqlTemplate(node)) {
          record(node, 'kysely', () => stringOf(first), true);
        }
      }
      ts.forEachChild(node, visit);
    };

    const insideSqlTemplate = (node: ts.Node): boolean => {
      for (let p = node.parent; p; p = p.parent) {
        if (ts.isTaggedTemplateExpression(p) && (isKyselySqlTag(p.tag) || isPrismaTag(p.tag))) return true;
        if (ts.isFunctionLike(p) || ts.isSourceFile(p)) return false;
      }
      return false;
    };

    visit(sf);
  }
  return { found, unchecked };
}
