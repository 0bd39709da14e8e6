/**
 * Storage maintenance for administrators, /user/admin/maintenance: run the reconciler as a dry run
 * (POST /api/admin/storage/reconcile {dry_run: true} through the admin API, api.ts), read its report per storage
 * location, then apply it ({dry_run: false}) and read what was done. Both runs are the admin API's, audited as such.
 */
import type { Context, Hono } from "hono";
import { AppError, type ErrorCode, errorStatus } from "../../errors.ts";
import { parseDateTime } from "../../http/time.ts";
import { QUARANTINE_DAYS, REPORT_LIST_LIMIT } from "../../services/reconcile/index.ts";
import { Card, durationText, FormToken, Notice, UtcTime } from "../components/index.ts";
import { num, rich, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedIn, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi, type ApiAnswer } from "./api.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const PAGE = `${ADMIN}/maintenance`;

/** A location of the report, as the admin API answers it. */
interface LocationReport {
  strategies: { id: number; name: string }[];
  driver: "local" | "s3";
  objects_scanned: number;
  recent_objects: number;
  unrecognised_objects: number;
  orphans_found: number;
  orphans_removed: number;
  orphans: string[];
  parts_found: number;
  parts_removed: number;
  records_missing_object: number;
  missing_objects: { key: string; path: string }[];
  errors: string[];
}

interface Report {
  dry_run: boolean;
  skipped: boolean;
  grace_seconds: number;
  started_at: string;
  duration_ms: number;
  locations: LocationReport[];
}

const strong = (chunks: unknown) => <strong>{chunks}</strong>;
const code = (chunks: unknown) => <code>{chunks}</code>;

function Explanation({ graceSeconds }: { graceSeconds?: number }) {
  const grace = graceSeconds === undefined ? t("admin.maintenance.graceDefault") : durationText(graceSeconds);
  return (
    <Card id="about" title={t("admin.maintenance.about")}>
      <p>{t("admin.maintenance.about.text")}</p>
      <ul>
        <li>{rich("admin.maintenance.about.dry", { strong })}</li>
        <li>{rich("admin.maintenance.about.apply", { strong, code, grace, days: QUARANTINE_DAYS, quarantine: ".quarantine/<date>/" })}</li>
      </ul>
    </Card>
  );
}

function RunForm({ signedIn, apply }: { signedIn: SignedIn; apply: boolean }) {
  return (
    <form method="post" action={`${PAGE}/${apply ? "apply" : "dry-run"}`} class="card">
      <FormToken signedIn={signedIn} />
      {apply && <p>{t("admin.maintenance.apply.text")}</p>}
      <button type="submit" class={apply ? "danger" : "primary"}>
        {t(apply ? "admin.maintenance.apply" : "admin.maintenance.dryRun")}
      </button>
    </form>
  );
}

/** A list of at most REPORT_LIST_LIMIT entries whose complete count is `count`. */
function Listed({ id, title, count, children }: { id: string; title: string; count: number; children: unknown[] }) {
  if (count === 0) return null;
  return (
    <>
      <h4 id={id}>
        {title}
        {children.length < count && <span class="muted small"> {t("admin.maintenance.firstOf", { shown: children.length, count })}</span>}
      </h4>
      <ul class="report-list" aria-labelledby={id}>
        {children}
      </ul>
    </>
  );
}

function LocationSection({ location, index, dryRun }: { location: LocationReport; index: number; dryRun: boolean }) {
  const id = `location-${index + 1}`;
  const names = location.strategies.map((s) => `${s.name} (#${s.id})`).join(", ");
  const rows: [string, number, boolean?][] = [
    ["scanned", location.objects_scanned],
    ["recent", location.recent_objects],
    ["unrecognised", location.unrecognised_objects],
    ["orphans", location.orphans_found],
    ["quarantined", location.orphans_removed, !dryRun],
    ["parts", location.parts_found],
    ["partsRemoved", location.parts_removed, !dryRun],
    ["missing", location.records_missing_object],
    ["errors", location.errors.length],
  ];
  return (
    <section class="card report-location" aria-labelledby={id}>
      <h3 id={id}>{t("admin.maintenance.location", { n: index + 1, driver: location.driver })}</h3>
      <p>
        <span class="muted">{t("admin.maintenance.strategies")}</span> {names || t("admin.none")}
      </p>
      <table class="settings report-counts">
        <caption class="visually-hidden">{t("admin.maintenance.counts", { n: index + 1 })}</caption>
        <tbody>
          {rows
            .filter(([, , shown]) => shown !== false)
            .map(([row, value]) => (
              <tr>
                <th scope="row">{t(`admin.maintenance.row.${row}` as "admin.maintenance.row.scanned")}</th>
                <td>{num(value)}</td>
              </tr>
            ))}
        </tbody>
      </table>
      <Listed id={`${id}-orphans`} title={t(dryRun ? "admin.maintenance.list.orphansDry" : "admin.maintenance.list.orphans")} count={location.orphans_found}>
        {location.orphans.map((path) => (
          <li>
            <code>{path}</code>
          </li>
        ))}
      </Listed>
      <Listed id={`${id}-missing`} title={t("admin.maintenance.list.missing")} count={location.records_missing_object}>
        {location.missing_objects.map((m) => (
          <li>{rich("admin.maintenance.missingItem", { code, key: m.key, path: m.path })}</li>
        ))}
      </Listed>
      <Listed id={`${id}-errors`} title={t("admin.maintenance.list.errors")} count={location.errors.length}>
        {location.errors.map((e) => (
          <li>{e}</li>
        ))}
      </Listed>
    </section>
  );
}

function ReportView({ report }: { report: Report }) {
  if (report.skipped) return <Notice kind="info">{t("admin.maintenance.skipped")}</Notice>;
  const started = parseDateTime(report.started_at);
  const sum = (f: (l: LocationReport) => number) => report.locations.reduce((n, l) => n + f(l), 0);
  const errors = sum((l) => l.errors.length);
  const parts = [
    t("admin.maintenance.sum.seconds", { seconds: Math.round(report.duration_ms / 100) / 10 }),
    t("admin.maintenance.sum.locations", { count: report.locations.length }),
    t("admin.maintenance.sum.scanned", { count: sum((l) => l.objects_scanned) }),
    t("admin.maintenance.sum.orphans", { count: sum((l) => l.orphans_found) }),
    ...(report.dry_run ? [] : [t("admin.maintenance.sum.quarantined", { count: sum((l) => l.orphans_removed) })]),
    t("admin.maintenance.sum.missing", { count: sum((l) => l.records_missing_object) }),
    ...(errors > 0 ? [t("admin.maintenance.sum.errors", { count: errors })] : []),
  ];
  return (
    <section aria-labelledby="report">
      <h2 id="report">{t(report.dry_run ? "admin.maintenance.report.dry" : "admin.maintenance.report.applied")}</h2>
      <p class="muted" data-testid="summary">
        {started ? <UtcTime at={started} /> : report.started_at} · {parts.join(" · ")}
      </p>
      {report.locations.length === 0 && <p class="card">{t("admin.maintenance.noLocation")}</p>}
      {report.locations.map((location, index) => (
        <LocationSection location={location} index={index} dryRun={report.dry_run} />
      ))}
      <p class="muted small">{t("admin.maintenance.listLimit", { limit: REPORT_LIST_LIMIT })}</p>
    </section>
  );
}

/** An API failure as the page's error (its status and message). */
function apiFailure(answer: ApiAnswer): AppError {
  const code = (Object.entries(errorStatus).find(([, status]) => status === answer.status)?.[0] ?? "internal") as ErrorCode;
  return new AppError(code, answer.message || t("admin.apiRefused"));
}

async function run(c: Context<SignedInEnv>, dryRun: boolean) {
  const signedIn = c.get("signedIn");
  const answer = await adminApi<Report>(c, "POST", "/api/admin/storage/reconcile", { dry_run: dryRun });
  if (!answer.ok) throw apiFailure(answer);
  const report = answer.data;
  return c.html(
    <AdminLayout title={t("admin.maintenance.title")} signedIn={signedIn} section="maintenance">
      {!report.dry_run && !report.skipped && <Notice kind="success">{t("admin.maintenance.ranForReal")}</Notice>}
      <ReportView report={report} />
      {report.dry_run && !report.skipped && <RunForm signedIn={signedIn} apply={true} />}
      <Explanation graceSeconds={report.grace_seconds} />
      <RunForm signedIn={signedIn} apply={false} />
    </AdminLayout>,
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/maintenance", requireAdminSession, (c) =>
    c.html(
      <AdminLayout title={t("admin.maintenance.title")} signedIn={c.get("signedIn")} section="maintenance">
        <Explanation />
        <RunForm signedIn={c.get("signedIn")} apply={false} />
      </AdminLayout>,
    ),
  );
  web.post("/admin/maintenance/dry-run", requireAdminSession, (c) => run(c, true));
  web.post("/admin/maintenance/apply", requireAdminSession, (c) => run(c, false));
}
