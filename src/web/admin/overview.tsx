/**
 * The admin overview: users, images and stored bytes in total and per strategy; uploads and bytes per day
 * for the last 30 days as a chart drawn here (inline SVG, no chart library in the browser); the readiness of every
 * storage; the database in use; the last sweeper and reconciler runs of this instance.
 */
import { asc, gte, sql } from "drizzle-orm";
import type { Hono } from "hono";
import type { Db } from "../../db/client.ts";
import { images, strategies, users } from "../../db/schema.ts";
import { lastRun, type LastRun } from "../../services/last-runs.ts";
import { Cell, formatBytes, Table, UtcTime } from "../components/index.ts";
import { num, rich, t } from "../i18n/index.ts";
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
      <desc id={`${id}-desc`}>
        {t("admin.overview.chart.desc", { total: format(total), days: days.length, day: busiest.day, most: format(value(busiest)) })}
      </desc>
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

const col = (k: string) => t(`admin.overview.col.${k}` as "admin.overview.col.job");

function RunLine({ label, run }: { label: string; run: LastRun | null }) {
  return (
    <tr>
      <th scope="row">{label}</th>
      {run ? (
        <>
          <Cell label={col("lastRun")}>
            <UtcTime at={run.at} />
          </Cell>
          <Cell label={col("result")}>{run.ok ? t("admin.overview.run.ok") : t("admin.overview.run.failed")}</Cell>
          <Cell label={col("summary")}>{run.summary}</Cell>
        </>
      ) : (
        <td colspan={3}>{t("admin.overview.run.never")}</td>
      )}
    </tr>
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin", requireAdminSession, async (c) => {
    const deps = c.get("deps");
    const [f, readiness] = await Promise.all([figures(deps.db, deps.clock()), c.get("services").readiness.check()]);
    const database = deps.config.database;
    const uploads = (n: number) => t("admin.overview.uploads.value", { count: n });
    return c.html(
      <AdminLayout title={t("admin.overview.title")} signedIn={c.get("signedIn")} section="overview">
        <dl class="stats">
          <div>
            <dt>{t("admin.overview.users")}</dt>
            <dd>{num(f.users)}</dd>
          </div>
          <div>
            <dt>{t("admin.overview.images")}</dt>
            <dd>{num(f.images)}</dd>
          </div>
          <div>
            <dt>{t("admin.overview.stored")}</dt>
            <dd>{formatBytes(f.bytes)}</dd>
          </div>
          <div>
            <dt>{t("admin.overview.database")}</dt>
            <dd>{t(`admin.overview.database.${database?.kind === "external" || database?.kind === "embedded" ? database.kind : "unknown"}`)}</dd>
          </div>
        </dl>
        {database && <p class="muted small">{database.detail}</p>}

        <section aria-labelledby="strategies-title">
          <h2 id="strategies-title">{t("admin.overview.storage")}</h2>
          <p data-testid="readiness">
            {readiness.ready ? (
              <span class="status-ok">{t("admin.overview.ready", { count: readiness.storage.length })}</span>
            ) : (
              <span class="status-bad">{readiness.message}</span>
            )}
          </p>
          <Table class="list" label={t("admin.overview.strategies.label")} columns={["strategy", "driver", "images", "used", "quota"].map(col)}>
            {f.perStrategy.map((s) => (
              <tr>
                <th scope="row">
                  <a href={`${ADMIN}/strategies/${s.id}`}>{`#${s.id} ${s.name}`}</a>
                  {!s.enabled && <span class="badge">{t("admin.badge.disabled")}</span>}
                </th>
                <Cell label={col("driver")}>{s.driver}</Cell>
                <Cell label={col("images")}>{num(s.images)}</Cell>
                <Cell label={col("used")}>{formatBytes(s.usedBytes)}</Cell>
                <Cell label={col("quota")}>{s.quotaKb === null ? t("admin.none") : formatBytes(s.quotaKb * 1024)}</Cell>
              </tr>
            ))}
          </Table>
        </section>

        <section aria-labelledby="activity-title">
          <h2 id="activity-title">{t("admin.overview.activity", { days: DAYS })}</h2>
          <p class="muted small">{t("admin.overview.activity.hint")}</p>
          <h3>{t("admin.overview.uploads", { count: f.days.reduce((n, d) => n + d.uploads, 0) })}</h3>
          <BarChart id="uploads-chart" title={t("admin.overview.uploads.chart")} days={f.days} value={(d) => d.uploads} format={uploads} />
          <h3>{t("admin.overview.bytes", { size: formatBytes(f.days.reduce((n, d) => n + d.bytes, 0)) })}</h3>
          <BarChart id="bytes-chart" title={t("admin.overview.bytes.chart")} days={f.days} value={(d) => d.bytes} format={formatBytes} />
          <details>
            <summary>{t("admin.overview.table")}</summary>
            {/* three short columns: they fit a phone as they are */}
            <Table class="list" stack={false} columns={["day", "uploads", "bytes"].map(col)}>
              {f.days.map((d) => (
                <tr>
                  <th scope="row">{d.day}</th>
                  <td>{num(d.uploads)}</td>
                  <td>{formatBytes(d.bytes)}</td>
                </tr>
              ))}
            </Table>
          </details>
        </section>

        <section aria-labelledby="jobs-title">
          <h2 id="jobs-title">{t("admin.overview.jobs")}</h2>
          <Table class="list" columns={["job", "lastRun", "result", "summary"].map(col)}>
            <RunLine label={t("admin.overview.job.sweeper")} run={lastRun(deps, "sweeper")} />
            <RunLine label={t("admin.overview.job.reconciler")} run={lastRun(deps, "reconciler")} />
          </Table>
          <p class="muted small">{rich("admin.overview.reconcileHint", { a: (chunks) => <a href={`${ADMIN}/maintenance`}>{chunks}</a> })}</p>
        </section>
      </AdminLayout>,
    );
  });
}
