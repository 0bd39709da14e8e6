/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests: every line must be a
 * `# HELP`, a `# TYPE` or a sample `name{label="value",…} value`; every sample must belong to a declared family
 * (a histogram's `_bucket`, `_sum` and `_count`); a histogram's buckets must not decrease and its `+Inf` bucket
 * must equal its count. Anything else throws, naming the line.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  samples: Sample[];
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+-?\\d+)?$`);
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

/** A value as Prometheus reads it (Go's ParseFloat: `NaN`, `Inf` and `+Inf`/`-Inf` in any case). */
function parseValue(text: string, line: number): number {
  const special = text.toLowerCase();
  if (special === "+inf" || special === "inf") return Infinity;
  if (special === "-inf") return -Infinity;
  if (special === "nan") return NaN;
  const value = Number(text);
  if (text === "" || Number.isNaN(value)) throw new Error(`line ${line}: ${JSON.stringify(text)} is not a number`);
  return value;
}

function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (!m || m.index !== start) throw new Error(`line ${line}: malformed labels {${text}}`);
    if (m[1]! in labels) throw new Error(`line ${line}: label ${m[1]} repeated`);
    labels[m[1]!] = m[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c));
  }
  return labels;
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const familyOf = (name: string) => {
    for (const suffix of ["_bucket", "_sum", "_count", ""]) {
      if (!name.endsWith(suffix)) continue;
      const family = families.get(name.slice(0, name.length - suffix.length));
      if (family && (suffix === "" || family.type === "histogram" || (family.type === "summary" && suffix !== "_bucket"))) return family;
    }
    return undefined;
  };
  text.split("\n").forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === "") return;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
    if (meta) {
      const [, kind, name, rest] = meta;
      if (!new RegExp(`^${NAME}$`).test(name!)) throw new Error(`line ${line}: bad metric name ${name}`);
      const family = families.get(name!) ?? { name: name!, help: "", type: "untyped" as const, samples: [] };
      families.set(name!, family);
      if (kind === "HELP") family.help = rest!;
      else if (["counter", "gauge", "histogram", "summary", "untyped"].includes(rest!)) family.type = rest as Family["type"];
      else throw new Error(`line ${line}: unknown type ${rest}`);
      return;
    }
    if (raw.startsWith("#")) return; // a comment
    const m = SAMPLE.exec(raw);
    if (!m) throw new Error(`line ${line}: not a sample line: ${raw}`);
    const family = familyOf(m[1]!);
    if (!family) throw new Error(`line ${line}: ${m[1]} belongs to no declared family`);
    family.samples.push({ name: m[1]!, labels: m[2] ? parseLabels(m[2], line) : {}, value: parseValue(m[3]!, line) });
  });
  for (const family of families.values()) {
    if (family.type !== "histogram") continue;
    const series = new Map<string, { buckets: [number, number][]; count?: number }>();
    for (const s of family.samples) {
      const { le, ...rest } = s.labels;
      const key = JSON.stringify(Object.entries(rest).sort());
      const entry = series.get(key) ?? { buckets: [] };
      series.set(key, entry);
      if (s.name.endsWith("_bucket")) entry.buckets.push([parseValue(le!, 0), s.value]);
      if (s.name.endsWith("_count")) entry.count = s.value;
    }
    for (const [key, { buckets, count }] of series) {
      buckets.sort((a, b) => a[0] - b[0]);
      buckets.forEach(([, v], j) => {
        if (j > 0 && v < buckets[j - 1]![1]) throw new Error(`${family.name} ${key}: buckets decrease`);
      });
      if (buckets.at(-1)?.[0] !== Infinity || buckets.at(-1)![1] !== count) throw new Error(`${family.name} ${key}: +Inf bucket ≠ count`);
    }
  }
  return families;
}

/** The value of the sample `name` whose labels include `labels` (undefined when there is none). */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const family of families.values()) {
    const s = family.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    if (s) return s.value;
  }
  return undefined;
}
