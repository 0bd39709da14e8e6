/**
 * Storage maintenance for administrators, /user/admin/maintenance: run the reconciler as a dry run
 * (POST /api/admin/storage/reconcile {dry_run: true} through the admin API, api.ts), read its report per storage
 * location, then apply it ({dry_run: false}) and read what was done. Both runs are the admin API's, audited as such.
 */
import type { Context, Hono } from "hono";
import { AppError, errorStatus, type ErrorCode } from "../../errors.ts";
import { parseDateTime } from "../../http/time.ts";
import { QUARANTINE_DAYS, REPORT_LIST_LIMIT } from "../../services/reconcile/index.ts";
import { UtcTime } from "../components/index.ts";
import { FormToken, Notice } from "../components/index.ts";
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

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function graceText(seconds: number) {
  if (seconds % 3600 === 0) return plural(seconds / 3600, "hour");
  if (seconds % 60 === 0) return plural(seconds / 60, "minute");
  return plural(seconds, "second");
}

function Explanation({ graceSeconds }: { graceSeconds?: number }) {
  const grace = graceSeconds === undefined ? "the grace period (an hour)" : `the grace period (${graceText(graceSeconds)})`;
  return (
    <section class="card" aria-labelledby="about">
      <h2 id="about">Reconcile the storage with the records</h2>
      <p>
        The reconciler lists every storage location and compares its objects with the image records. It runs on its own at start and at every interval; here you
        can run it now.
      </p>
      <ul>
        <li>
          A <strong>dry run</strong> only reports: nothing is moved or deleted.
        </li>
        <li>
          <strong>Applying</strong> moves every orphan (an object no record names) older than {grace} to the quarantine, <code>.quarantine/&lt;date&gt;/</code>{" "}
          on the same storage, where it is kept {QUARANTINE_DAYS} days before a later run deletes it (move it back to undo). Temporary files of abandoned
          uploads older than the grace period are deleted. Records whose object is missing are only reported, never deleted. Younger objects may be uploads in
          progress and are left alone.
        </li>
      </ul>
    </section>
  );
}

function RunForm({ signedIn, apply }: { signedIn: SignedIn; apply: boolean }) {
  return (
    <form method="post" action={`${PAGE}/${apply ? "apply" : "dry-run"}`} class="card">
      <FormToken signedIn={signedIn} />
      {apply ? (
        <>
          <p>
            Apply runs the reconciler again, for real: what it finds then (uploads and deletes may have happened since this dry run) is moved to the quarantine
            or deleted as described above.
          </p>
          <button type="submit" class="danger">
            Apply: quarantine the orphans
          </button>
        </>
      ) : (
        <button type="submit" class="primary">
          Run a dry run
        </button>
      )}
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
        {children.length < count && (
          <span class="muted small">
            {" "}
            (the first {children.length} of {count})
          </span>
        )}
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
  const rows: [string, string][] = [
    ["Objects scanned", String(location.objects_scanned)],
    ["Younger than the grace period (not judged yet)", String(location.recent_objects)],
    ["Not written by this service (never removed)", String(location.unrecognised_objects)],
    ["Orphans found", String(location.orphans_found)],
    ...(!dryRun ? ([["Orphans moved to the quarantine", String(location.orphans_removed)]] as [string, string][]) : []),
    ["Temporary files (parts) found", String(location.parts_found)],
    ...(!dryRun ? ([["Temporary files deleted", String(location.parts_removed)]] as [string, string][]) : []),
    ["Records missing an object", String(location.records_missing_object)],
    ["Errors", String(location.errors.length)],
  ];
  return (
    <section class="card report-location" aria-labelledby={id}>
      <h3 id={id}>
        Location {index + 1}: {location.driver === "s3" ? "S3 bucket" : "local folder"}
      </h3>
      <p>
        <span class="muted">Strategies:</span> {names || "none"}
      </p>
      <table class="settings report-counts">
        <caption class="visually-hidden">Counts of location {index + 1}</caption>
        <tbody>
          {rows.map(([label, value]) => (
            <tr>
              <th scope="row">{label}</th>
              <td>{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Listed id={`${id}-orphans`} title={dryRun ? "Orphans (would be quarantined)" : "Orphans"} count={location.orphans_found}>
        {location.orphans.map((path) => (
          <li>
            <code>{path}</code>
          </li>
        ))}
      </Listed>
      <Listed id={`${id}-missing`} title="Records missing an object" count={location.records_missing_object}>
        {location.missing_objects.map((m) => (
          <li>
            image <code>{m.key}</code>: <code>{m.path}</code>
          </li>
        ))}
      </Listed>
      <Listed id={`${id}-errors`} title="Errors" count={location.errors.length}>
        {location.errors.map((e) => (
          <li>{e}</li>
        ))}
      </Listed>
    </section>
  );
}

function ReportView({ report }: { report: Report }) {
  const started = parseDateTime(report.started_at);
  const sum = (f: (l: LocationReport) => number) => report.locations.reduce((n, l) => n + f(l), 0);
  if (report.skipped) {
    return <Notice kind="info">Another reconciliation was running (on this or another instance): nothing was scanned. Try again in a moment.</Notice>;
  }
  return (
    <section aria-labelledby="report">
      <h2 id="report">{report.dry_run ? "Dry run report" : "Report of the applied run"}</h2>
      <p class="muted" data-testid="summary">
        {started ? <UtcTime at={started} /> : report.started_at} · {(report.duration_ms / 1000).toFixed(1)} s · {plural(report.locations.length, "location")} ·{" "}
        {plural(
          sum((l) => l.objects_scanned),
          "object",
        )}{" "}
        scanned ·{" "}
        {plural(
          sum((l) => l.orphans_found),
          "orphan",
        )}{" "}
        found
        {!report.dry_run && <> · {sum((l) => l.orphans_removed)} quarantined</>} ·{" "}
        {plural(
          sum((l) => l.records_missing_object),
          "record",
        )}{" "}
        missing an object
        {sum((l) => l.errors.length) > 0 && (
          <>
            {" "}
            ·{" "}
            {plural(
              sum((l) => l.errors.length),
              "error",
            )}
          </>
        )}
      </p>
      {report.locations.length === 0 && <p class="card">No storage location to scan.</p>}
      {report.locations.map((location, index) => (
        <LocationSection location={location} index={index} dryRun={report.dry_run} />
      ))}
      <p class="muted small">Lists show at most {REPORT_LIST_LIMIT} entries each; the counts are complete.</p>
    </section>
  );
}

/** An API failure as the page's error (its status and message). */
function apiFailure(answer: ApiAnswer): AppError {
  const code = (Object.entries(errorStatus).find(([, status]) => status === answer.status)?.[0] ?? "internal") as ErrorCode;
  return new AppError(code, answer.message || "The admin API refused.");
}

async function run(c: Context<SignedInEnv>, dryRun: boolean) {
  const signedIn = c.get("signedIn");
  const answer = await adminApi<Report>(c, "POST", "/api/admin/storage/reconcile", { dry_run: dryRun });
  if (!answer.ok) throw apiFailure(answer);
  const report = answer.data;
  return c.html(
    <AdminLayout title="Maintenance" signedIn={signedIn} section="maintenance">
      {!report.dry_run && !report.skipped && <Notice kind="success">The reconciler ran for real: the report below says what it moved and deleted.</Notice>}
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
      <AdminLayout title="Maintenance" signedIn={c.get("signedIn")} section="maintenance">
        <Explanation />
        <RunForm signedIn={c.get("signedIn")} apply={false} />
      </AdminLayout>,
    ),
  );
  web.post("/admin/maintenance/dry-run", requireAdminSession, (c) => run(c, true));
  web.post("/admin/maintenance/apply", requireAdminSession, (c) => run(c, false));
}
