/** The one table (printed, and in BENCHMARKS.md), the targets, and the before → after section. */
import { existsSync, readFileSync } from "node:fs";
import { fmt, fmtRatio, markdownTable, mb, median, textTable } from "./util.ts";

export type TopologyKey = "pg" | "emb";
export const topologyLabel: Record<TopologyKey, string> = { pg: "PostgreSQL", emb: "embedded" };

/** One measured run of one target. */
export interface Run {
  round: number;
  /** Accepted answers per second (the expected status). */
  rate: number;
  p50: number;
  p99: number;
  errors: number;
  /** Server CPU time (all threads) per accepted answer, ms. */
  cpuMs: number;
  /** Peak VmRSS over the run, KB (server processes only). */
  rssPeak: number;
  /** VmRSS when the process next had work (after the other targets' runs), KB. */
  rssAfter: number;
  /** The same for the processes the server started (an embedded database server), summed PSS, KB; NaN when none. */
  dbPeak: number;
  dbAfter: number;
}

export interface Idle {
  /** After setup → after the run, KB. */
  rss: [number, number];
  db: [number, number];
}

export interface ScenarioResult {
  id: string;
  group: "serve" | "upload" | "list";
  label: string;
  ref?: "nginx" | "floor";
  runs: Partial<Record<TopologyKey | "ref", Run[]>>;
  notes: string[];
}

export interface Summary {
  rate: number;
  p50: number;
  p99: number;
  cpuMs: number;
  rssPeak: number;
  rssAfter: number;
  dbPeak: number;
  dbAfter: number;
  errors: number;
  rounds: number;
}

export function summarise(runs: Run[] | undefined): Summary | undefined {
  if (!runs?.length) return undefined;
  const m = (f: (r: Run) => number) => median(runs.map(f));
  return {
    rate: m((r) => r.rate),
    p50: m((r) => r.p50),
    p99: m((r) => r.p99),
    cpuMs: m((r) => r.cpuMs),
    rssPeak: maxOf(runs.map((r) => r.rssPeak)),
    rssAfter: m((r) => r.rssAfter),
    dbPeak: maxOf(runs.map((r) => r.dbPeak)),
    dbAfter: m((r) => r.dbAfter),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    rounds: runs.length,
  };
}

export interface Figures {
  scenario: ScenarioResult;
  pg?: Summary;
  emb?: Summary;
  ref?: Summary;
}

export const ratioOf = (x: Summary | undefined, ref: Summary | undefined) => (x && ref ? x.rate / ref.rate : NaN);

const maxOf = (xs: number[]) => {
  const finite = xs.filter(Number.isFinite);
  return finite.length ? Math.max(...finite) : NaN;
};
const withDb = (peak: number, after: number, dbPeak: number, dbAfter: number) =>
  `${mb(peak)}→${mb(after)}${Number.isFinite(dbPeak) ? ` (+db ${mb(dbPeak)}→${mb(dbAfter)})` : ""}`;
const rss = (s: Summary | undefined) => (s ? withDb(s.rssPeak, s.rssAfter, s.dbPeak, s.dbAfter) : "–");

export function tableRows(figures: Figures[], topologies: TopologyKey[], idle: Partial<Record<TopologyKey, Idle>>) {
  const head = ["scenario", "ref", "ref req/s", "ref p99", "ref CPU ms"];
  for (const t of topologies) head.push(`${topologyLabel[t]} req/s`, "p50 ms", "p99 ms", "× ref", "CPU ms/req", "RSS MB peak→after");
  const rows: string[][] = [];
  for (const f of figures) {
    const row = [f.scenario.label, f.scenario.ref ?? "", f.ref ? fmt(f.ref.rate) : "", f.ref ? fmt(f.ref.p99) : "", f.ref && Number.isFinite(f.ref.cpuMs) ? fmt(f.ref.cpuMs) : ""];
    for (const t of topologies) {
      const s = f[t];
      const flag = s && s.errors > 0 ? "!" : "";
      row.push(s ? `${fmt(s.rate)}${flag}` : "–", s ? fmt(s.p50) : "–", s ? fmt(s.p99) : "–", f.ref ? fmtRatio(ratioOf(s, f.ref)) : "", s ? fmt(s.cpuMs) : "–", rss(s));
    }
    rows.push(row);
  }
  const idleRow = ["idle: after setup → after the run", "", "", "", ""];
  for (const t of topologies) {
    const i = idle[t];
    idleRow.push("", "", "", "", "", i ? withDb(i.rss[0], i.rss[1], i.db[0], i.db[1]) : "–");
  }
  rows.push(idleRow);
  return { head, rows };
}

export const printTable = (t: { head: string[]; rows: string[][] }) => textTable(t.head, t.rows);
export const markdown = (t: { head: string[]; rows: string[][] }) => markdownTable(t.head, t.rows);

// ---------------------------------------------------------------- summary

/** The headline figures (BENCHMARKS.md's summary, quoted in docs/operations.md's Performance section and the README). */
export function summaryTable(figures: Figures[], topologies: TopologyKey[]): string {
  const byId = new Map(figures.map((f) => [f.scenario.id, f]));
  const rows: string[][] = [];
  const add = (label: string, id: string, show: (s: Summary, f: Figures) => string, ref: (f: Figures) => string) => {
    const f = byId.get(id);
    if (!f) return;
    rows.push([label, ...topologies.map((t) => (f[t] ? show(f[t]!, f) : "–")), ref(f)]);
  };
  const vsNginx = (s: Summary, f: Figures) => `${fmt(s.rate)} req/s (${fmtRatio(ratioOf(s, f.ref))})`;
  const nginx = (f: Figures) => (f.ref ? `nginx ${fmt(f.ref.rate)} req/s` : "");
  add("GET /i/ 100 KB, 200, 16 clients", "serve-200-c16", vsNginx, nginx);
  add("GET /i/ 100 KB, 304, 16 clients", "serve-304-c16", vsNginx, nginx);
  add("upload 256×256 PNG (20 KB), 16 clients", "upload-png-c16", (s) => `${fmt(s.rate)}/s, p99 ${fmt(s.p99)} ms`, (f) => (f.ref ? `floor ${fmt(f.ref.rate)}/s` : ""));
  add("upload 2000×1500 JPEG (1 MB), 4 clients", "upload-jpeg-c4", (s, f) => `${fmt(s.rate)}/s (${fmtRatio(ratioOf(s, f.ref))} of the floor)`, (f) =>
    f.ref ? `floor ${fmt(f.ref.rate)}/s` : "",
  );
  const lists = figures.filter((f) => f.scenario.group === "list");
  const largest = lists.at(-1);
  if (largest) {
    add(`list 30 newest of ${largest.scenario.label.replace(/^list 30 newest, /, "").replace(/, c=16$/, "")}, 16 clients`, largest.scenario.id, (s) => `${fmt(s.rate)} req/s, p99 ${fmt(s.p99)} ms`, () => "");
  }
  const peak = (t: TopologyKey) => {
    const cells = figures.map((f) => f[t]).filter((s): s is Summary => !!s);
    if (!cells.length) return "–";
    const rss = Math.max(...cells.map((c) => c.rssPeak).filter(Number.isFinite));
    const db = cells.map((c) => c.dbPeak).filter(Number.isFinite);
    return `${mb(rss)} MB${db.length ? ` + ${mb(Math.max(...db))} MB database` : ""}`;
  };
  rows.push(["peak RSS of the server, any cell", ...topologies.map(peak), ""]);
  return markdownTable(["", ...topologies.map((t) => topologyLabel[t]), "reference"], rows);
}

// ---------------------------------------------------------------- targets

export function targetLines(figures: Figures[], topologies: TopologyKey[]): string[] {
  const byId = new Map(figures.map((f) => [f.scenario.id, f]));
  const lines: string[] = [];
  const cells: string[] = [];
  let allServe = true;
  for (const id of ["serve-200-c1", "serve-200-c16", "serve-304-c1", "serve-304-c16"]) {
    const f = byId.get(id);
    if (!f) continue;
    for (const t of topologies) {
      const r = ratioOf(f[t], f.ref);
      if (!(r >= 0.5)) allServe = false;
      cells.push(`${topologyLabel[t]} ${f.scenario.label.replace(/^GET \/i\/ \S+ \S+ /, "")}: ${fmtRatio(r)}`);
    }
  }
  lines.push(`serving ≥ 0.5× nginx on the same file: ${allServe ? "met" : "NOT met"} (${cells.join("; ")})`);
  const png = byId.get("upload-png-c16");
  if (png) {
    const parts = topologies.map((t) => {
      const s = png[t];
      return `${topologyLabel[t]} ${fmt(s?.rate)} up/s, p99 ${fmt(s?.p99)} ms ${s && s.p99 <= 100 ? "(met)" : "(NOT met)"}`;
    });
    lines.push(`small PNG uploads at c=16, p99 ≤ 100 ms: ${parts.join("; ")}`);
  }
  const jpeg = byId.get("upload-jpeg-c4");
  if (jpeg) {
    const parts = topologies.map((t) => `${topologyLabel[t]} ${fmt(jpeg[t]?.rate)} up/s = ${fmtRatio(ratioOf(jpeg[t], jpeg.ref))} of the floor`);
    lines.push(`large JPEG uploads at c=4 vs the in-process floor (${fmt(jpeg.ref?.rate)}/s): ${parts.join("; ")}`);
  }
  return lines;
}

// ---------------------------------------------------------------- before → after

export const PLACEHOLDER = "_(lead: what changed this figure)_";

/** The issue's figures, and where this run's counterpart is found. */
export function beforeAfter(figures: Figures[], topologies: TopologyKey[]): { figure: string; before: string; after: string }[] {
  const byId = new Map(figures.map((f) => [f.scenario.id, f]));
  const per = (id: string, show: (s: Summary, f: Figures) => string, withRef = false) => {
    const f = byId.get(id);
    if (!f) return "not measured";
    const parts = topologies.map((t) => (f[t] ? `${topologyLabel[t]} ${show(f[t]!, f)}` : `${topologyLabel[t]} –`));
    if (withRef && f.ref) parts.push(`nginx ${fmt(f.ref.rate)}`);
    return parts.join("; ");
  };
  const vsRef = (s: Summary, f: Figures) => `${fmt(s.rate)} req/s (${fmtRatio(ratioOf(s, f.ref))})`;
  const rssRange = (group: string, t: TopologyKey) => {
    const cells = figures.filter((f) => f.scenario.group === group && f[t]).map((f) => f[t]!);
    const range = (xs: number[]) => `${mb(Math.min(...xs))}–${mb(Math.max(...xs))} MB`;
    if (!cells.length) return "–";
    const db = cells.map((c) => c.dbPeak).filter(Number.isFinite);
    return `${range(cells.map((c) => c.rssPeak))}${db.length ? ` (+ its database processes ${range(db)})` : ""}`;
  };
  const listing = figures.filter((f) => f.scenario.group === "list");
  return [
    { figure: "GET /i/ 100 KB, 200, c=16", before: "~2,200 req/s vs nginx ~27,000 (0.08×)", after: per("serve-200-c16", vsRef, true) },
    { figure: "GET /i/ 100 KB, 304, c=16", before: "~2,500 req/s vs nginx ~81,000 (0.03×)", after: per("serve-304-c16", vsRef, true) },
    {
      figure: "upload 256×256 PNG, c=1 / c=16",
      before: "138 / 225 req/s",
      after: topologies
        .map((t) => `${topologyLabel[t]} ${fmt(byId.get("upload-png-c1")?.[t]?.rate)} / ${fmt(byId.get("upload-png-c16")?.[t]?.rate)} req/s`)
        .join("; "),
    },
    { figure: "upload 256×256 PNG, p99 at c=16", before: "208 ms", after: per("upload-png-c16", (s) => `${fmt(s.p99)} ms`) },
    { figure: "upload 2000×1500 JPEG, c=16", before: "49 req/s", after: per("upload-jpeg-c16", (s, f) => `${fmt(s.rate)} req/s (${fmtRatio(ratioOf(s, f.ref))} of the floor)`) },
    {
      figure: "CPU per 2000×1500 JPEG upload (server process, c=16)",
      before: "34 ms",
      after: `${per("upload-jpeg-c16", (s) => `${fmt(s.cpuMs)} ms`)}; floor ${fmt(byId.get("upload-jpeg-c16")?.ref?.cpuMs)} ms`,
    },
    {
      figure: "list 30 newest, c=16",
      before: "~700 req/s",
      after: listing.length ? listing.map((f) => `${f.scenario.label.replace(/^list 30 newest, /, "").replace(/, c=16$/, "")}: ${per(f.scenario.id, (s) => `${fmt(s.rate)}`)}`).join(" · ") : "not measured",
    },
    {
      figure: "embedded RSS under upload load",
      before: "450–670 MB",
      after: topologies.includes("emb") ? `embedded peaks ${rssRange("upload", "emb")}${topologies.includes("pg") ? `; PostgreSQL ${rssRange("upload", "pg")}` : ""}` : "not measured",
    },
    {
      figure: "embedded RSS, listing",
      before: "spikes to 1.2 GB",
      after: topologies.includes("emb") ? `embedded peaks ${rssRange("list", "emb")}${topologies.includes("pg") ? `; PostgreSQL ${rssRange("list", "pg")}` : ""}` : "not measured",
    },
  ];
}

const START = "<!-- what-changed:start -->";
const END = "<!-- what-changed:end -->";

/** The lead's notes of an earlier BENCHMARKS.md, by figure, so a re-run keeps them. */
export function previousNotes(file: string): Map<string, string> {
  const notes = new Map<string, string>();
  if (!existsSync(file)) return notes;
  const text = readFileSync(file, "utf8");
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) return notes;
  for (const line of text.slice(a, b).split("\n")) {
    if (!line.startsWith("|") || line.startsWith("|---")) continue;
    const cells = line
      .slice(1, line.lastIndexOf("|"))
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    if (cells.length < 4 || cells[0] === "figure") continue;
    const note = cells[cells.length - 1]!;
    if (note && note !== PLACEHOLDER) notes.set(cells[0]!.replace(/\\\|/g, "|"), note.replace(/\\\|/g, "|"));
  }
  return notes;
}

export function whatChangedSection(rows: { figure: string; before: string; after: string }[], notes: Map<string, string>): string {
  return [
    START,
    markdownTable(
      ["figure", "before (the issue)", "after (this run)", "what changed it"],
      rows.map((r) => [r.figure, r.before, r.after, notes.get(r.figure) ?? PLACEHOLDER]),
      "left",
    ),
    END,
  ].join("\n");
}
