/**
 * The audit log for administrators, /user/admin/audit: every change made through the admin API (by
 * ADMIN_TOKEN, or by an administrator through these pages), newest first, PER_PAGE at a time, each as a sentence
 * (audit-sentence.ts) with the raw entry behind "Details"; "Older" pages by the last id shown (keyset paging,
 * services/audit.ts listAudit), so a page costs the same however deep it is.
 */
import type { Hono } from "hono";
import { validationError } from "../../errors.ts";
import { listAudit } from "../../services/audit.ts";
import { Cell, EmptyState, Pager, Table, UtcTime } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import { requireAdminSession, type WebEnv } from "../session.ts";
import { namesOf, sentence } from "./audit-sentence.ts";
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
    const { db } = c.get("deps");
    // one more than shown: whether there is an older page
    const found = await listAudit(db, PER_PAGE + 1, before);
    const rows = found.rows.slice(0, PER_PAGE);
    const names = await namesOf(db, rows);
    const last = rows.at(-1);
    const older = found.rows.length > PER_PAGE && last ? last.id : null;
    return c.html(
      <AdminLayout title={t("admin.audit.title")} signedIn={c.get("signedIn")} section="audit">
        <p class="muted" data-testid="total">
          {rich("admin.audit.total", { count: found.total, before: before ?? "none", code: (chunks) => <code>{chunks}</code> })}
        </p>
        {rows.length === 0 ? (
          <EmptyState>{before === undefined ? t("admin.audit.empty") : t("admin.audit.noOlder")}</EmptyState>
        ) : (
          <Table class="audit" label={t("admin.audit.caption")} columns={[t("admin.audit.col.time"), t("admin.audit.col.what"), t("admin.audit.col.address")]}>
            {rows.map((r) => {
              const detail = JSON.stringify(r.detail ?? {});
              return (
                <tr id={`entry-${r.id}`}>
                  <Cell label={t("admin.audit.col.time")}>
                    <UtcTime at={r.createdAt} />
                  </Cell>
                  <Cell label={t("admin.audit.col.what")} class="detail">
                    <p class="sentence">{sentence(r, names)}</p>
                    <details>
                      <summary>{t("admin.audit.details")}</summary>
                      {/* the entry as stored: actor, method and route → target, then the fields sent */}
                      <code>{`${r.actor} ${r.action} → ${target(r.targetType, r.targetId)}`}</code>
                      {detail !== "{}" && <code>{detail}</code>}
                    </details>
                  </Cell>
                  <Cell label={t("admin.audit.col.address")}>{r.ip || t("common.dash")}</Cell>
                </tr>
              );
            })}
          </Table>
        )}
        {(before !== undefined || older !== null) && (
          <Pager
            page={before === undefined ? 1 : 2}
            lastPage={older === null ? (before === undefined ? 1 : 2) : undefined}
            href={(p) => (p <= 1 ? PAGE : `${PAGE}?before=${older}`)}
            label={t("admin.audit.pages")}
            prev={t("admin.audit.newest")}
            next={t("admin.audit.older")}
            summary=""
          />
        )}
      </AdminLayout>,
    );
  });
}
