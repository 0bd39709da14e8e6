/**
 * Webhooks: what one subscribed endpoint adds to an upload (CPU and round trips; the bar 1.1×), and delivery
 * throughput at 16 uploaders to a fast local receiver (Bun.serve in this process, answering 200 at once).
 */
import { join } from "node:path";
import postgres from "postgres";
import { cpuMs, treeCpu } from "../../../test/support/proc.ts";
import { type BenchImage, benchImages } from "../lib/images.ts";
import { render } from "../lib/report.ts";
import { fmt, freshDatabase, markdownTable, median, onCleanup, PG_URL, percentile, postgresInfo, ratio, startFacts, tempDir, worker } from "../lib/run.ts";
import { type Account, admin, type AppServer, createAccount, serverCommand, startAppServer, uploadOnce } from "../lib/server.ts";
import type { PartOptions } from "./index.ts";

const TARGET = 1.1;
const UPLOADERS = 16;
type Key = "emb" | "pg";
const label: Record<Key, string> = { emb: "embedded", pg: "PostgreSQL" };
const verdict = (r: number) => (!Number.isFinite(r) ? "not measured" : r <= TARGET ? "**met**" : "**not met**");

/** The receiver: notes each event's path, webhook-id, image key and arrival time. */
function receiver() {
  const arrivals: { path: string; id: string; key: string; t: number }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      const text = await req.text();
      const key = /"key":"([^"]+)"/.exec(text)?.[1] ?? "";
      arrivals.push({ path: new URL(req.url).pathname, id: req.headers.get("webhook-id") ?? "", key, t: performance.now() });
      return new Response(null);
    },
  });
  onCleanup("webhook receiver", () => server.stop(true));
  const of = (prefix: string) => arrivals.filter((a) => a.path.startsWith(prefix));
  return {
    url: (path: string) => `http://127.0.0.1:${server.port}${path}`,
    of,
    until: async (prefix: string, n: number, ms: number) => {
      for (const deadline = performance.now() + ms; of(prefix).length < n; await Bun.sleep(5)) if (performance.now() > deadline) return false;
      return true;
    },
  };
}

export async function runWebhooks(o: PartOptions): Promise<string> {
  const cfg = o.quick
    ? { rounds: 2, uploads: 8, tputSeconds: 2, tputMax: 400, fanSeconds: 1, fanMax: 40, stmtUploads: 5, drainMs: 60_000 }
    : { rounds: 6, uploads: 30, tputSeconds: 5, tputMax: 3000, fanSeconds: 3, fanMax: 250, stmtUploads: 10, drainMs: 120_000 };
  const facts = await startFacts(o.command);
  const pg = await postgresInfo();
  const keys: Key[] = pg.version ? ["emb", "pg"] : ["emb"];
  // the database's backends' CPU is read from /proc: only when PostgreSQL runs on this machine
  const monitor = pg.version ? postgres(PG_URL, { max: 1, onnotice: () => {} }) : null;
  if (monitor) onCleanup("PostgreSQL monitor", () => monitor.end({ timeout: 1 }));
  const backendsReadable = !!monitor && Number.isFinite(cpuMs(Number((await monitor<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid)));
  const dir = tempDir("webhooks");
  const images = await benchImages(dir);
  const rx = receiver();

  o.log("webhooks: counting statements per upload and per delivery (a process of its own)…");
  const stmtWhere = pg.version ? `PostgreSQL ${pg.version}` : "the embedded PostgreSQL";
  type Measured = { upload: number; uploadLog: string[]; task: number; queue: number; deliveryLog: string[] };
  const stmts = await worker<{ none: Measured[]; one: Measured[]; alone: { kind: string; ms: number }[] }>({
    op: "statements",
    database: pg.version ? { kind: "postgres", url: await freshDatabase("imghost_webhooks_stmt") } : { kind: "embedded" },
    dataDir: join(dir, "data-stmt"),
    bodyFile: images.png.bodyFile,
    contentType: images.png.contentType,
    uploads: cfg.stmtUploads,
    webhooks: { bodyFile: images.jpeg.bodyFile, contentType: images.jpeg.contentType, rounds: cfg.rounds, uploads: cfg.uploads },
  });

  const tops: { key: Key; server: AppServer; accounts: Account[]; dbName?: string }[] = [];
  for (const key of keys) {
    const url = key === "pg" ? await freshDatabase("imghost_webhooks") : undefined;
    const server = await startAppServer({
      label: `webhooks (${label[key]})`,
      dataDir: join(dir, `data-${key}`),
      databaseUrl: url,
      env: { WEBHOOK_ALLOW: "127.0.0.1" },
    });
    tops.push({
      key,
      server,
      accounts: await Promise.all([0, 1, 2, 3].map((i) => createAccount(server, `hook${i}`))),
      dbName: url && new URL(url).pathname.slice(1),
    });
  }
  const addEndpoint = (t: (typeof tops)[number], path: string) =>
    admin<{ id: number }>(t.server, "POST", "/api/admin/webhooks", { url: rx.url(path), events: ["image.uploaded"] });
  const removeEndpoint = (t: (typeof tops)[number], id: number) => admin(t.server, "DELETE", `/api/admin/webhooks/${id}`);
  /** CPU ms of the server's tree, plus (PostgreSQL) the backends serving the run's database. */
  const cpu = async (t: (typeof tops)[number]) => {
    const tree = treeCpu(t.server.pid).total;
    if (t.key !== "pg" || !backendsReadable) return { tree, db: NaN };
    const pids = await monitor!<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${t.dbName!}`;
    return { tree, db: pids.reduce((s, r) => s + (cpuMs(Number(r.pid)) || 0), 0) };
  };

  // ---- 1. upload cost: rounds alternating no endpoint / one site-wide endpoint, c=1, the CPU read once every event arrived
  const cost = new Map<Key, { kind: string; cpu: number; db: number; p50: number; waitMs: number }[]>();
  const notes: string[] = [];
  for (const t of tops) {
    const token = t.accounts[0]!.token;
    const warm = await addEndpoint(t, `/warm-${t.key}`);
    for (let i = 0; i < 3; i++) await uploadOnce(t.server, token, images.jpeg);
    await rx.until(`/warm-${t.key}`, 3, 30_000);
    await removeEndpoint(t, warm.id);
    const rounds = [];
    for (let round = 0; round < cfg.rounds; round++) {
      const kind = Math.floor((round + 1) / 2) % 2 === 0 ? "none" : "one"; // none, one, one, none, none, one…
      const path = `/cost-${t.key}-${round}`;
      const ep = kind === "one" ? await addEndpoint(t, path) : null;
      await Bun.sleep(200);
      const c0 = await cpu(t);
      const ms: number[] = [];
      for (let i = 0; i < cfg.uploads; i++) ms.push((await uploadOnce(t.server, token, images.jpeg)).ms);
      const tUploads = performance.now();
      if (ep && !(await rx.until(path, cfg.uploads, 30_000)))
        notes.push(`${label[t.key]} round ${round + 1}: ${rx.of(path).length} of ${cfg.uploads} events within 30 s`);
      const waitMs = performance.now() - tUploads;
      await Bun.sleep(250); // the delivery's record, after the receiver's answer
      const c1 = await cpu(t);
      rounds.push({ kind, cpu: (c1.tree - c0.tree) / cfg.uploads, db: (c1.db - c0.db) / cfg.uploads, p50: median(ms), waitMs });
      if (ep) await removeEndpoint(t, ep.id);
      o.log(`webhooks, ${label[t.key]} cost round ${round + 1}/${cfg.rounds} (${kind}): ${fmt(rounds.at(-1)!.cpu)} ms CPU per upload`);
    }
    cost.set(t.key, rounds);
  }

  // ---- 2. throughput: 16 uploaders, one endpoint; then 16 endpoints each receiving every event
  const throughput = async (t: (typeof tops)[number], png: BenchImage, endpoints: number, seconds: number, max: number) => {
    const prefix = `/tput-${t.key}-${endpoints}/`;
    const ids = [];
    for (let i = 0; i < endpoints; i++) ids.push((await addEndpoint(t, `${prefix}${i}`)).id);
    await Bun.sleep(200);
    const answers = new Map<string, number>();
    let [started, failed] = [0, 0];
    const c0 = await cpu(t);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: UPLOADERS }, async (_, u) => {
        while (performance.now() < t0 + seconds * 1000 && started++ < max) {
          await uploadOnce(t.server, t.accounts[u % 4]!.token, png).then(
            (r) => answers.set(r.key, r.t),
            () => failed++,
          );
        }
      }),
    );
    const tUploads = performance.now();
    await rx.until(prefix, answers.size * endpoints, cfg.drainMs);
    const got = rx.of(prefix);
    const [first, last] = [Math.min(...got.map((a) => a.t)), Math.max(...got.map((a) => a.t))];
    await Bun.sleep(250);
    const c1 = await cpu(t);
    for (const id of ids) await removeEndpoint(t, id);
    const distinct = new Set(got.map((a) => `${a.path} ${a.id}`)).size;
    const delays = got.filter((a) => answers.has(a.key)).map((a) => a.t - answers.get(a.key)!);
    const after = got.filter((a) => a.t > tUploads).length;
    const missing = answers.size * endpoints - distinct;
    const perUpload = (x: number) => x / Math.max(1, answers.size);
    o.log(`webhooks, ${label[t.key]}, ${endpoints} endpoint(s): ${answers.size} uploads, ${distinct} of ${answers.size * endpoints} events`);
    return [
      `${label[t.key]}, ${endpoints} endpoint${endpoints > 1 ? "s" : ""}`,
      `${answers.size} in ${((tUploads - t0) / 1000).toFixed(1)} s`,
      fmt(answers.size / ((tUploads - t0) / 1000)),
      `${distinct} of ${answers.size * endpoints}`,
      fmt(distinct / ((last - t0) / 1000)),
      fmt(distinct / ((last - first) / 1000)),
      after >= 10 ? fmt(after / ((last - tUploads) / 1000)) : "–",
      fmt(percentile(delays, 50)),
      fmt(percentile(delays, 99)),
      missing === 0 && got.length === distinct && failed === 0
        ? "yes"
        : `**no**: ${missing} missing, ${got.length - distinct} duplicates, ${failed} uploads failed`,
      Number.isFinite(c1.db - c0.db)
        ? `${fmt(perUpload(c1.tree - c0.tree + c1.db - c0.db))} (${fmt(perUpload(c1.db - c0.db))} db)`
        : fmt(perUpload(c1.tree - c0.tree)),
    ];
  };
  const tput = [];
  for (const t of tops)
    tput.push(await throughput(t, images.png, 1, cfg.tputSeconds, cfg.tputMax), await throughput(t, images.png, 16, cfg.fanSeconds, cfg.fanMax));
  for (const t of tops) await t.server.stop();

  // ---- the figures
  const verdicts: string[] = [];
  const cpuRows: string[][] = [];
  const [a0, a1] = ["none", "enqueue"].map((k) => median(stmts.alone.filter((r) => r.kind === k).map((r) => r.ms)));
  cpuRows.push([`${stmtWhere}: **the upload alone** (its delivery written, not sent)`, fmt(a0), fmt(a1), ratio(a1! / a0!), verdict(a1! / a0!), "", "", ""]);
  verdicts.push(`CPU of the upload itself, ${stmtWhere}: ${fmt(a1)} ÷ ${fmt(a0)} ms = ${ratio(a1! / a0!)} — ${verdict(a1! / a0!)} (target ≤ ${TARGET}×)`);
  for (const t of tops) {
    const of = (kind: string) => {
      const rs = cost.get(t.key)!.filter((r) => r.kind === kind);
      return {
        total: median(rs.map((r) => r.cpu + (Number.isFinite(r.db) ? r.db : 0))),
        tree: median(rs.map((r) => r.cpu)),
        p50: median(rs.map((r) => r.p50)),
        withDb: rs.some((r) => Number.isFinite(r.db)),
      };
    };
    const [n, e] = [of("none"), of("one")];
    cpuRows.push([
      `${label[t.key]} (server tree${n.withDb ? " + database backends" : t.key === "emb" ? ", its database included" : ""})`,
      fmt(n.total),
      fmt(e.total),
      ratio(e.total / n.total),
      verdict(e.total / n.total),
      fmt(n.p50),
      fmt(e.p50),
      ratio(e.p50 / n.p50),
    ]);
    verdicts.push(
      `CPU of the upload and its delivery, ${label[t.key]}: ${fmt(e.total)} ÷ ${fmt(n.total)} ms = ${ratio(e.total / n.total)} — ${verdict(e.total / n.total)} (target ≤ ${TARGET}×); the difference, ${fmt(e.total - n.total)} ms, is what one delivered event costs`,
    );
  }
  const med = (xs: Measured[], f: (m: Measured) => number) => median(xs.map(f));
  const range = (xs: Measured[], f: (m: Measured) => number) => `${Math.min(...xs.map(f))}–${Math.max(...xs.map(f))}`;
  const [up0, up1] = [med(stmts.none, (m) => m.upload), med(stmts.one, (m) => m.upload)];
  const [del0, del1] = [med(stmts.none, (m) => m.task + m.queue), med(stmts.one, (m) => m.task + m.queue)];
  verdicts.push(`database round trips of the upload request: ${ratio(up1 / up0)} — ${verdict(up1 / up0)}`);
  verdicts.push(
    `database round trips including the delivery's: ${ratio((up1 + del1) / (up0 + del0))}, reported (${fmt(del1)} statements per delivered event, after the upload's answer)`,
  );
  return render("webhooks", {
    facts: facts.facts([
      ["software", `Bun ${Bun.version}, PostgreSQL ${pg.version ?? `not reachable (${pg.problem})`}`],
      [
        "server",
        `\`${serverCommand("WEBHOOK_ALLOW=127.0.0.1 ")}\`, fresh DATA_DIR per topology, WEBHOOK_CONCURRENCY ${process.env.WEBHOOK_CONCURRENCY ?? "8 (default)"}, 4 deliveries at once per endpoint`,
      ],
    ]),
    target: TARGET,
    verdicts: verdicts.map((v) => `- ${v}`).join("\n"),
    cpuTable: markdownTable(
      ["CPU ms per upload (median of rounds)", "no endpoint", "one endpoint", "÷", `≤ ${TARGET}×`, "p50 ms, none", "p50 ms, one", "÷"],
      cpuRows,
    ),
    rounds: cfg.rounds,
    uploads: cfg.uploads,
    jpeg: images.jpeg.label,
    backends: !monitor
      ? ""
      : backendsReadable
        ? "For PostgreSQL, the backends serving the run's database (pg_stat_activity's pids, their /proc/PID/stat) are added. "
        : "For PostgreSQL, the database's backends were not readable from /proc: the server's tree only. ",
    alone: stmts.alone.map((r) => `${r.kind} ${fmt(r.ms)}`).join(" · "),
    perRound: markdownTable(
      ["topology", ...Array.from({ length: cfg.rounds }, (_, i) => `round ${i + 1}`)],
      tops.map((t) => [
        label[t.key],
        ...cost
          .get(t.key)!
          .map(
            (r) =>
              `${r.kind}: ${fmt(r.cpu)}${Number.isFinite(r.db) ? ` + ${fmt(r.db)} db` : ""} ms, p50 ${fmt(r.p50)} ms${r.kind === "one" ? `, last event ${fmt(r.waitMs)} ms after the last answer` : ""}`,
          ),
      ]),
      true,
    ),
    stmtTable: markdownTable(
      ["database statements per upload", "no endpoint", "one endpoint", "÷"],
      [
        [
          "the upload request's own",
          `${fmt(up0)} (${range(stmts.none, (m) => m.upload)})`,
          `${fmt(up1)} (${range(stmts.one, (m) => m.upload)})`,
          ratio(up1 / up0),
        ],
        [
          "the delivery's (queue, attempt, record)",
          `${fmt(del0)}`,
          `${fmt(del1)}: ${fmt(med(stmts.one, (m) => m.task))} by the tasks (postgres.js) + ${fmt(med(stmts.one, (m) => m.queue))} by graphile-worker (pg)`,
          "",
        ],
        ["total: upload and its delivery", fmt(up0 + del0), fmt(up1 + del1), ratio((up1 + del1) / (up0 + del0))],
      ],
    ),
    stmtUploads: cfg.stmtUploads,
    stmtWhere,
    stmtSample: [...stmts.one.at(-1)!.uploadLog, "--- delivery ---", ...stmts.one.at(-1)!.deliveryLog].join("\n"),
    tputTable: markdownTable(
      [
        "cell",
        "uploads",
        "uploads/s",
        "deliveries received",
        "deliveries/s end to end",
        "deliveries/s, first to last",
        "deliveries/s after the uploads",
        "delay p50 ms",
        "delay p99 ms",
        "each exactly once",
        "CPU ms per upload",
      ],
      tput,
    ),
    uploaders: UPLOADERS,
    png: images.png.label,
    tput: `${cfg.tputSeconds} s (at most ${cfg.tputMax} uploads) with one endpoint; for ${cfg.fanSeconds} s (at most ${cfg.fanMax}) with 16 endpoints`,
    drain: cfg.drainMs / 1000,
    lastEvent: tops
      .map(
        (t) =>
          `${fmt(
            median(
              cost
                .get(t.key)!
                .filter((r) => r.kind === "one")
                .map((r) => r.waitMs),
            ),
          )} ms (${label[t.key]})`,
      )
      .join(" and "),
    notes: notes.length ? notes.map((n) => `- ${n}`).join("\n") : "- every event of the cost rounds arrived",
  });
}
