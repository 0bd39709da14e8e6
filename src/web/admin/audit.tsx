/**
 * The audit log for administrators, /user/admin/audit: every change made through the admin API (by
 * ADMIN_TOKEN, or by an administrator through these pages), newest first, PER_PAGE at a time; "Older" pages by the
 * last id shown (keyset paging, services/audit.ts listAudit), so a page costs the same however deep it is.
 */
import type { Hono } from "hono";
import { validationError } from "../../errors.ts";
import { listAudit } from "../../services/audit.ts";
import { UtcTime } from "../components/index.ts";
import { requireAdminSession, type WebEnv } from "../session.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const PER_PAGE = 50;
const PAGE = `${ADMIN}/audit`;

/** `before`: absent, or an entry id (a positive integer). */
function beforeQuery(value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= Number.MAX_SAFE_INTEGER)) throw validationError({ before: ["The before field must be an entry id (a positive whole number)."] });
  return n;
}

const target = (type: string, id: string) => (id ? `${type} ${id}` : type);

export function register(web: Hono<WebEnv>) {
  web.get("/admin/audit", requireAdminSession, async (c) => {
    const before = beforeQuery(c.req.query("before"));
    // one more than shown: whether there is an older page
    const found = await listAudit(c.get("deps").db, PER_PAGE + 1, before);
    const rows = found.rows.slice(0, PER_PAGE);
    const total = found.total;
    const last = rows.at(-1);
    const older = found.rows.length > PER_PAGE && last ? `${PAGE}?before=${last.id}` : null;
    return c.html(
      <AdminLayout title="Audit log" signedIn={c.get("signedIn")} section="audit">
        <p class="muted" data-testid="total">
          {total === 1 ? "1 entry" : `${total} entries`} in all, newest first{before !== undefined ? `; entries older than #${before}` : ""}. Every change made
          through the admin API is here: by <code>ADMIN_TOKEN</code> (automation, the command line) or by an administrator on these pages.
        </p>
        {rows.length === 0 ? (
          <p class="card">{before === undefined ? "Nothing has been changed through the admin API yet." : "No older entries."}</p>
        ) : (
          <div class="table-wrap">
            <table class="audit stack">
              <caption class="visually-hidden">Audit log entries, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Address</th>
                  <th scope="col">Detail</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => {
                  const detail = JSON.stringify(r.detail ?? {});
                  return (
                    <tr id={`entry-${r.id}`}>
                      <td data-label="Time">
                        <UtcTime at={r.createdAt} />
                      </td>
                      <td data-label="Actor">{r.actor}</td>
                      <td data-label="Action">
                        <code>{r.action}</code>
                      </td>
                      <td data-label="Target">{target(r.targetType, r.targetId)}</td>
                      <td data-label="Address">{r.ip || "—"}</td>
                      <td data-label="Detail" class="detail">
                        {detail === "{}" ? <span class="muted">—</span> : <code>{detail}</code>}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
        <nav class="pages" aria-label="Pages">
          {before !== undefined ? <a href={PAGE}>← Newest</a> : <span></span>}
          {older ? (
            <a href={older} rel="next">
              Older →
            </a>
          ) : (
            <span></span>
          )}
        </nav>
      </AdminLayout>,
    );
  });
}
