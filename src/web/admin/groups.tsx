/**
 * Groups: the user groups with their key figures, and a form for every field of the admin API's GroupInput
 * (group-form.tsx; sizes, pixels and durations in human units, group-values.ts). The page reads through the
 * repositories; saving is POST/PATCH /api/admin/groups through adminApi, so that the API's validation applies (shown
 * next to the fields) and the audit log names the administrator.
 */
import { count } from "drizzle-orm";
import type { Context, Hono } from "hono";
import { getGroupWithStrategies, type GroupWithStrategies, listGroups } from "../../db/repositories/groups.ts";
import { listStrategies } from "../../db/repositories/strategies.ts";
import { users } from "../../db/schema.ts";
import { notFound } from "../../errors.ts";
import { Cell, formatBytes, Notice, Pager, Table } from "../components/index.ts";
import { readForm } from "../form.ts";
import { num, rich, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { errorsOf, type FormStatus, pageOf, recordIdOf, statusOf, tk } from "./form-kit.ts";
import { GROUPS, GroupForm } from "./group-form.tsx";
import { FIELDS, type GroupValues, inputOf, NEW_GROUP, OWN_ERRORS, valuesOf } from "./group-values.ts";
import { AdminLayout } from "./layout.tsx";

const PER_PAGE = 100;

async function renderForm(
  c: Context<SignedInEnv>,
  group: GroupWithStrategies | null,
  values: GroupValues,
  errors: { fields: Record<string, string>; form?: string } = { fields: {} },
  status: FormStatus = 200,
  notice?: string,
) {
  const strategies = await listStrategies(c.get("deps").db);
  const title = group ? t("admin.groups.edit", { name: group.name }) : t("admin.groups.new");
  return c.html(
    <AdminLayout title={title} signedIn={c.get("signedIn")} section="groups">
      <p>
        <a href={GROUPS}>← {t("admin.groups.all")}</a>
      </p>
      {notice && <Notice kind="success">{notice}</Notice>}
      {group?.isGuest && <Notice kind="info">{rich("admin.groups.guestNotice", { strong: (chunks) => <strong>{chunks}</strong> })}</Notice>}
      <GroupForm signedIn={c.get("signedIn")} group={group} strategies={strategies} values={values} errors={errors} />
    </AdminLayout>,
    status,
  );
}

const limitText = (n: number | null) => (n === null ? t("common.dash") : num(n));

async function renderList(c: Context<SignedInEnv>) {
  const { db } = c.get("deps");
  const page = pageOf(c.req.query("page"));
  const [{ rows, total }, strategies, members] = await Promise.all([
    listGroups(db, PER_PAGE, (page - 1) * PER_PAGE),
    listStrategies(db),
    db.select({ groupId: users.groupId, n: count() }).from(users).groupBy(users.groupId),
  ]);
  const names = new Map(strategies.map((s) => [s.id, s.name]));
  const memberCount = new Map(members.map((m) => [m.groupId, m.n]));
  const last = Math.max(1, Math.ceil(total / PER_PAGE));
  const col = (k: string) => tk(`admin.groups.col.${k}`);
  return c.html(
    <AdminLayout title={t("admin.groups.title")} signedIn={c.get("signedIn")} section="groups">
      {c.req.query("done") === "created" && <Notice kind="success">{t("admin.groups.created")}</Notice>}
      <p>
        <a class="button primary" href={`${GROUPS}/new`}>
          {t("admin.groups.new")}
        </a>
      </p>
      <Table
        class="list admin-table"
        label={t("admin.groups.list.label")}
        columns={["group", "users", "largest", "capacity", "rates", "formats", "strategies", "metadata"].map(col)}
      >
        {rows.map((g) => (
          <tr>
            <Cell label={col("group")}>
              <a href={`${GROUPS}/${g.id}`} aria-label={t("admin.groups.editLabel", { name: g.name })}>
                {g.name}
              </a>
              {g.isGuest && <span class="badge">{t("admin.groups.badge.guest")}</span>}
              {g.isDefault && <span class="badge">{t("admin.groups.badge.default")}</span>}
              {!g.enabled && <span class="badge">{t("admin.badge.disabled")}</span>}
              {g.enabled && !g.allowApi && <span class="badge">{t("admin.groups.badge.noApi")}</span>}
              {g.webhookAllowInternal && <span class="badge">{t("admin.groups.badge.internal")}</span>}
            </Cell>
            <Cell label={col("users")}>{g.isGuest ? t("common.dash") : num(memberCount.get(g.id) ?? 0)}</Cell>
            <Cell label={col("largest")}>{formatBytes(g.maxFileSizeKb * 1024)}</Cell>
            <Cell label={col("capacity")}>{formatBytes(g.defaultCapacityKb * 1024)}</Cell>
            <Cell label={col("rates")}>{`${limitText(g.uploadsPerMinute)} / ${limitText(g.uploadsPerHour)} / ${limitText(g.uploadsPerDay)}`}</Cell>
            <Cell label={col("formats")}>{g.allowedExtensions.join(", ")}</Cell>
            <Cell label={col("strategies")}>{g.strategyIds.length ? g.strategyIds.map((id) => names.get(id) ?? `#${id}`).join(" → ") : t("admin.none")}</Cell>
            <Cell label={col("metadata")}>{tk(`admin.groups.metadata.short.${g.metadata}`)}</Cell>
          </tr>
        ))}
      </Table>
      {last > 1 && <Pager page={page} lastPage={last} href={(p) => `${GROUPS}?page=${p}`} label={t("admin.groups.pages")} />}
    </AdminLayout>,
  );
}

async function groupOf(c: Context<SignedInEnv>) {
  const group = await getGroupWithStrategies(c.get("deps").db, recordIdOf(c.req.param("id") ?? "", "group"));
  if (!group) throw notFound(t("admin.noSuch", { what: "group" }));
  return group;
}

/** Saves the form through the admin API; a refusal re-renders it with the API's messages (the unit fields' in the form's words). */
async function save(c: Context<SignedInEnv>, group: GroupWithStrategies | null) {
  const form = await readForm(c);
  const strategies = await listStrategies(c.get("deps").db);
  const made = inputOf(form, strategies);
  if (made.error) return renderForm(c, group, made.values, { fields: { strategy_ids: made.error } }, 422);
  const answer = group ? await adminApi(c, "PATCH", `/api/admin/groups/${group.id}`, made.input) : await adminApi(c, "POST", "/api/admin/groups", made.input);
  if (!answer.ok) {
    if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return renderForm(c, group, made.values, errorsOf(answer, FIELDS, "", OWN_ERRORS), statusOf(answer));
  }
  return c.redirect(group ? `${GROUPS}/${group.id}?done=saved` : `${GROUPS}?done=created`, 303);
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/groups", requireAdminSession, (c) => renderList(c));
  web.get("/admin/groups/new", requireAdminSession, (c) => renderForm(c, null, { ...NEW_GROUP }));
  web.post("/admin/groups", requireAdminSession, (c) => save(c, null));
  web.get("/admin/groups/:id", requireAdminSession, async (c) => {
    const group = await groupOf(c);
    return renderForm(c, group, valuesOf(group), undefined, 200, c.req.query("done") === "saved" ? t("admin.groups.saved") : undefined);
  });
  web.post("/admin/groups/:id", requireAdminSession, async (c) => save(c, await groupOf(c)));
}
