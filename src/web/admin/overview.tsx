/**
 * The admin overview: users, images and stored bytes in total and per strategy; uploads and bytes per day
 * for the last 30 days as a chart drawn here (inline SVG, no chart library in the browser); the readiness of every
 * storage; the database in use; the last sweeper and reconciler runs of this instance.
 */
import { asc, gte, sql } from "drizzle-orm";
import type { Hono } from "hono";
import type { Db } from "../../db/client.ts";
import { images, strategies, users } from "../../db/schema.ts";
import { formatUtc } from "../../http/time.ts";
import { lastRun, type LastRun } from "../../services/last-runs.ts";
import { formatBytes } from "../components/index.ts";
import { requireAdminSession, type WebEnv } from "../session.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const DAYS = 30;

interface Day {
  day: string;
  uploads: number;
  bytes: number;
}

async function figures(db: Db, now: Date) {
  const since = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (DAYS - 1)));
  const [[userCount], [imageTotals], perStrategy, perDay] = await Promise.all([
    db.select({ n: sql<number>`count(*)::int` }).from(users),
    db.select({ n: sql<number>`count(*)::int`, bytes: sql<number>`coalesce(sum(${images.size}), 0)::float8` }).from(images),
    db
      .select({
        id: strategies.id,
        name: strategies.name,
        driver: strategies.driver,
        enabled: strategies.enabled,
        usedBytes: strategies.usedBytes,
        quotaKb: strategies.quotaKb,
        // spelled out: inside a subquery drizzle leaves column names unqualified, and "id" would be the image's
        images: sql<number>`(select count(*)::int from "images" where "images"."strategy_id" = "strategies"."id")`,
      })
      .from(strategies)
      .orderBy(asc(strategies.id))
      .limit(100),
    db
      .select({
        day: sql<string>`to_char(date_trunc('day', ${images.createdAt} at time zone 'UTC'), 'YYYY-MM-DD')`,
        uploads: sql<number>`count(*)::int`,
        bytes: sql<number>`sum(${images.size})::float8`,
      })
      .from(images)
      .where(gte(images.createdAt, since))
      .groupBy(sql`1`),
  ]);
  const byDay = new Map(perDay.map((d) => [d.day, d]));
  const days: Day[] = Array.from({ length: DAYS }, (_, i) => {
    const day = new Date(since.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    const found = byDay.get(day);
    return { day, uploads: found?.uploads ?? 0, bytes: found?.bytes ?? 0 };
  });
  return { users: userCount?.n ?? 0, images: imageTotals?.n ?? 0, bytes: imageTotals?.bytes ?? 0, perStrategy, days };
}

/** A bar chart of one series, drawn on the server: an <svg> with a title and a description, bars with their own titles. */
function BarChart({ id, title, days, value, format }: { id: string; title: string; days: Day[]; value: (d: Day) => number; format: (n: number) => string }) {
  const width = 600;
  const height = 160;
  const top = 10;
  const bottom = 24;
  const left = 4;
  const slot = (width - left) / days.length;
  const max = Math.max(1, ...days.map(value));
  const total = days.reduce((n, d) => n + value(d), 0);
  const busiest = days.reduce((a, b) => (value(b) > value(a) ? b : a), days[0]!);
  return (
    <svg class="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby={`${id}-title ${id}-desc`}>
      <title id={`${id}-title`}>{title}</title>
      <desc id={`${id}-desc`}>{`${format(total)} in ${days.length} days; the busiest day ${busiest.day} with ${format(value(busiest))}.`}</desc>
      <line class="axis" x1={left} y1={height - bottom} x2={width} y2={height - bottom} />
      {days.map((d, i) => {
        const h = ((height - top - bottom) * value(d)) / max;
        return (
          <rect class="bar" x={(left + i * slot + 1).toFixed(1)} y={(height - bottom - h).toFixed(1)} width={(slot - 2).toFixed(1)} height={h.toFixed(1)}>
            <title>{`${d.day}: ${format(value(d))}`}</title>
          </rect>
        );
      })}
      <text x={left} y={height - 6}>
        {days[0]!.day}
      </text>
      <text x={width} y={height - 6} text-anchor="end">
        {days[days.length - 1]!.day}
      </text>
    </svg>
  );
}

function RunLine({ label, run }: { label: string; run: LastRun | null }) {
  return (
    <tr>
      <th scope="row">{label}</th>
      {run ? (
        <>
          <td>
            <time datetime={run.at.toISOString()}>{formatUtc(run.at)}</time>
          </td>
          <td>{run.ok ? "ok" : "failed"}</td>
          <td>{run.summary}</td>
        </>
      ) : (
        <td colspan={3}>not run on this instance since it started</td>
      )}
    </tr>
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin", requireAdminSession, async (c) => {
    const deps = c.get("deps");
    const [f, readiness] = await Promise.all([figures(deps.db, deps.clock()), c.get("services").readiness.check()]);
    const database = deps.config.database;
    return c.html(
      <AdminLayout title="Administration" signedIn={c.get("signedIn")} section="overview">
        <dl class="stats">
          <div>
            <dt>Users</dt>
            <dd>{f.users.toLocaleString("en")}</dd>
          </div>
          <div>
            <dt>Images</dt>
            <dd>{f.images.toLocaleString("en")}</dd>
          </div>
          <div>
            <dt>Stored (images' own bytes)</dt>
            <dd>{formatBytes(f.bytes)}</dd>
          </div>
          <div>
            <dt>Database</dt>
            <dd>{database?.kind === "external" ? "PostgreSQL" : database?.kind === "embedded" ? "embedded" : "not reported"}</dd>
          </div>
        </dl>
        {database && <p class="muted small">{database.detail}</p>}

        <section aria-labelledby="strategies-title">
          <h2 id="strategies-title">Storage</h2>
          <p data-testid="readiness">
            {readiness.ready ? (
              <span class="status-ok">{`Ready: every enabled storage (${readiness.storage.length}) accepted a probe write.`}</span>
            ) : (
              <span class="status-bad">{readiness.message}</span>
            )}
          </p>
          <table class="list stack">
            <thead>
              <tr>
                <th scope="col">Strategy</th>
                <th scope="col">Driver</th>
                <th scope="col">Images</th>
                <th scope="col">Used</th>
                <th scope="col">Quota</th>
              </tr>
            </thead>
            <tbody>
              {f.perStrategy.map((s) => (
                <tr>
                  <th scope="row">
                    <a href={`${ADMIN}/strategies/${s.id}`}>{`#${s.id} ${s.name}`}</a>
                    {!s.enabled && <span class="badge">disabled</span>}
                  </th>
                  <td data-label="Driver">{s.driver}</td>
                  <td data-label="Images">{s.images.toLocaleString("en")}</td>
                  <td data-label="Used">{formatBytes(s.usedBytes)}</td>
                  <td data-label="Quota">{s.quotaKb === null ? "none" : formatBytes(s.quotaKb * 1024)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>

        <section aria-labelledby="activity-title">
          <h2 id="activity-title">The last {DAYS} days (UTC)</h2>
          <p class="muted small">Images uploaded each day that are still stored (deleted and expired ones are not counted).</p>
          <h3>{`Uploads per day (${f.days.reduce((n, d) => n + d.uploads, 0)} in all)`}</h3>
          <BarChart id="uploads-chart" title="Uploads per day" days={f.days} value={(d) => d.uploads} format={(n) => `${n} uploads`} />
          <h3>{`Bytes uploaded per day (${formatBytes(f.days.reduce((n, d) => n + d.bytes, 0))} in all)`}</h3>
          <BarChart id="bytes-chart" title="Bytes uploaded per day" days={f.days} value={(d) => d.bytes} format={formatBytes} />
          <details>
            <summary>The figures as a table</summary>
            <table class="list">
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Uploads</th>
                  <th scope="col">Bytes</th>
                </tr>
              </thead>
              <tbody>
                {f.days.map((d) => (
                  <tr>
                    <th scope="row">{d.day}</th>
                    <td>{d.uploads}</td>
                    <td>{formatBytes(d.bytes)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
        </section>

        <section aria-labelledby="jobs-title">
          <h2 id="jobs-title">Background jobs on this instance</h2>
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Last run</th>
                <th scope="col">Result</th>
                <th scope="col">Summary</th>
              </tr>
            </thead>
            <tbody>
              <RunLine label="Expiry sweeper" run={lastRun(deps, "sweeper")} />
              <RunLine label="Reconciler" run={lastRun(deps, "reconciler")} />
            </tbody>
          </table>
          <p class="muted small">
            Run the reconciler by hand on the <a href={`${ADMIN}/maintenance`}>Maintenance</a> page.
          </p>
        </section>
      </AdminLayout>,
    );
  });
}
