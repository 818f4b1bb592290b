/**
 * A strict parser of the Prometheus text exposition format (0.0.4), in the spirit of `promtool check
 * metrics`: it throws on anything a scraper would reject or that hides a mistake (a sample without a TYPE,
 * a family declared twice, a duplicate series, a bad escape, histogram buckets that are not cumulative or
 * whose +Inf bucket is not the count).
 */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<string, string[]> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['_sum', '_count', ''],
  counter: [''],
  gauge: [''],
  untyped: [''],
};

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`label without a value: ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL.test(name)) throw new Error(`bad label name ${JSON.stringify(name)}: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`label value not quoted: ${line}`);
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`bad escape \\${next}: ${line}`);
      } else value += text[j];
    }
    if (text[j] !== '"') throw new Error(`unterminated label value: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (i < text.length) throw new Error(`expected , between labels: ${line}`);
  }
  return labels;
}

function parseValue(text: string, line: string): number {
  // As Prometheus reads values (Go's strconv.ParseFloat): NaN and Inf in any case; prom-client writes `Nan`.
  if (/^\+?inf$/i.test(text)) return Infinity;
  if (/^-inf$/i.test(text)) return -Infinity;
  if (/^nan$/i.test(text)) return NaN;
  if (!/^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value ${JSON.stringify(text)}: ${line}`);
  return Number(text);
}

export function parsePrometheusText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, Family>();
  const seenSeries = new Set<string>();
  const familyOf = (sample: string) => {
    for (const f of families.values()) if (SUFFIXES[f.type]!.some((s) => `${f.name}${s}` === sample)) return f;
    return undefined;
  };
  for (const line of text.split('\n').slice(0, -1)) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (!m) continue; // a plain comment
      const [, kind, name, rest = ''] = m;
      if (!NAME.test(name!)) throw new Error(`bad metric name: ${line}`);
      const family = families.get(name!) ?? { name: name!, type: 'untyped' as Family['type'], help: '', samples: [] };
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`bad type: ${line}`);
        if (families.has(name!) && families.get(name!)!.samples.length) throw new Error(`TYPE after samples: ${line}`);
        family.type = rest as Family['type'];
      } else {
        if (family.help) throw new Error(`HELP twice for ${name}`);
        family.help = rest;
      }
      families.set(name!, family);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const [, name, labelText = '', valueText] = m;
    const family = familyOf(name!);
    if (!family) throw new Error(`sample of an undeclared metric: ${line}`);
    const labels = parseLabels(labelText, line);
    const key = `${name}{${Object.keys(labels)
      .sort()
      .map((k) => `${k}=${JSON.stringify(labels[k])}`)
      .join(',')}}`;
    if (seenSeries.has(key)) throw new Error(`duplicate series ${key}`);
    seenSeries.add(key);
    family.samples.push({ name: name!, labels, value: parseValue(valueText!, line) });
  }
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function checkHistogram(family: Family) {
  const groups = new Map<string, Sample[]>();
  const keyOf = (labels: Record<string, string>) =>
    JSON.stringify(
      Object.entries(labels)
        .filter(([k]) => k !== 'le')
        .sort(),
    );
  for (const s of family.samples) groups.set(keyOf(s.labels), [...(groups.get(keyOf(s.labels)) ?? []), s]);
  for (const samples of groups.values()) {
    const buckets = samples
      .filter((s) => s.name.endsWith('_bucket'))
      .map((s) => ({ le: parseValue(s.labels.le ?? '', `le of ${family.name}`), value: s.value }));
    const count = samples.find((s) => s.name === `${family.name}_count`);
    if (!count || !samples.some((s) => s.name === `${family.name}_sum`)) throw new Error(`${family.name}: a series without _sum or _count`);
    buckets.sort((a, b) => a.le - b.le);
    if (buckets.at(-1)?.le !== Infinity) throw new Error(`${family.name}: no +Inf bucket`);
    buckets.forEach((b, i) => {
      if (i && b.value < buckets[i - 1]!.value) throw new Error(`${family.name}: buckets are not cumulative`);
    });
    if (buckets.at(-1)!.value !== count.value)
      throw new Error(`${family.name}: +Inf bucket ${buckets.at(-1)!.value} is not _count ${count.value}`);
  }
}

/** The value of one series (0 when absent, the value a counter starts from). */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (
        s.name === name &&
        Object.keys(labels).length === Object.keys(s.labels).length &&
        Object.entries(labels).every(([k, v]) => s.labels[k] === v)
      )
        return s.value;
    }
  }
  return 0;
}
