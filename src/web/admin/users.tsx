/**
 * Admin pages for accounts: search by name or email with pagination; create; edit group, capacity (a size with a
 * unit), status, email, name and role; set a password or make a one-time link to set one; revoke the tokens and end
 * the sessions; delete (after saying what happens to the images; user-page.tsx). Every change goes through the admin
 * API (api.ts), with its validation, its messages and its audit log.
 */
import type { Context, Hono } from "hono";
import { listGroups } from "../../db/repositories/groups.ts";
import { Card, Cell, EmptyState, FormToken, formatBytes, Notice, Pager, RadioGroup, sizeKbOf, Table, TextInput } from "../components/index.ts";
import { type FormFields, formField, readForm } from "../form.ts";
import { num, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi, type ApiAnswer } from "./api.ts";
import { errorsOf, NOTHING_SHOWN, numberOf, pageOf, type Shown, tk } from "./form-kit.ts";
import { AdminLayout } from "./layout.tsx";
import { type AdminUser, type GroupChoice, GroupSelect, roleOptions, USERS, UserPage } from "./user-page.tsx";

const PER_PAGE = 50;
const FIELDS = ["username", "email", "name", "group_id", "capacity_kb", "enabled", "role", "password"];
/** The capacity's error in the form's words: the API's would speak of KB only. */
const OWN_ERRORS = { capacity_kb: () => t("admin.error.size", { range: "≥ 0 KB" }) };

/** What `done` in the address announces (fixed notices: the address never says what to print). */
const NOTICES: Record<string, string> = {
  created: "admin.users.notice.created",
  saved: "admin.users.notice.saved",
  password: "admin.users.notice.password",
  "signed-out": "admin.users.notice.signedOut",
  deleted: "admin.users.notice.deleted",
};
const noticeOf = (c: Context<SignedInEnv>) => {
  const key = NOTICES[c.req.query("done") ?? ""];
  return key ? tk(key) : undefined;
};

async function groupsFor(c: Context<SignedInEnv>): Promise<GroupChoice[]> {
  return (await listGroups(c.get("deps").db, 500, 0)).rows.filter((g) => !g.isGuest);
}

/** A refusal as the form's errors, and the page's status. */
const refused = (answer: ApiAnswer) => errorsOf(answer, FIELDS, "", OWN_ERRORS);
const statusOf = (answer: ApiAnswer) => (answer.status === 404 ? 404 : answer.status === 422 ? 422 : 400);

/** The list: search, pages, and the form to create a user. */
async function renderList(c: Context<SignedInEnv>, shown: Shown = NOTHING_SHOWN(), status: 200 | 400 | 404 | 422 = 200) {
  const q = (c.req.query("q") ?? "").slice(0, 100);
  const page = Math.min(pageOf(c.req.query("page")), 100_000);
  const query = new URLSearchParams({ page: String(page), per_page: String(PER_PAGE), ...(q ? { q } : {}) });
  const [list, groups] = await Promise.all([
    adminApi<{ users: AdminUser[]; last_page: number; total: number }>(c, "GET", `/api/admin/users?${query}`),
    groupsFor(c),
  ]);
  const users = list.ok ? list.data.users : [];
  const href = (p: number) => `${USERS}?${new URLSearchParams({ page: String(p), ...(q ? { q } : {}) })}`;
  const v = shown.values;
  const e = shown.errors.fields;
  const col = (k: string) => tk(`admin.users.col.${k}`);
  const groupName = (id: number) => groups.find((g) => g.id === id)?.name ?? t("admin.users.groupN", { id });
  return c.html(
    <AdminLayout title={t("admin.users.title")} signedIn={c.get("signedIn")} section="users">
      {status === 200 && noticeOf(c) && <Notice kind="success">{noticeOf(c)}</Notice>}
      {!list.ok && <Notice kind="error">{list.message}</Notice>}
      <form method="get" action={USERS} class="toolbar" role="search">
        <label for="q">{t("admin.users.search")}</label>
        <input id="q" name="q" type="search" value={q} maxlength={100} />
        <button type="submit">{t("admin.users.search.button")}</button>
      </form>
      {list.ok && (
        <p class="muted" data-testid="total">
          {q ? t("admin.users.totalMatching", { count: list.data.total, q }) : t("admin.users.total", { count: list.data.total })}
        </p>
      )}
      {list.ok && users.length === 0 ? (
        <EmptyState>{t("admin.users.empty")}</EmptyState>
      ) : (
        <Table class="list" label={t("admin.users.list.label")} columns={["user", "email", "group", "status", "images", "used"].map(col)}>
          {users.map((u) => (
            <tr>
              <Cell label={col("user")}>
                <a href={`${USERS}/${u.id}`}>{u.username}</a>
                {u.role === "admin" && <span class="badge">{t("admin.badge.admin")}</span>}
              </Cell>
              <Cell label={col("email")}>{u.email}</Cell>
              <Cell label={col("group")}>{groupName(u.group_id)}</Cell>
              <Cell label={col("status")}>{u.enabled ? t("admin.enabled") : t("admin.disabled")}</Cell>
              <Cell label={col("images")}>{num(u.image_num)}</Cell>
              <Cell label={col("used")}>{formatBytes(u.used_kb * 1024)}</Cell>
            </tr>
          ))}
        </Table>
      )}
      {list.ok && list.data.last_page > 1 && <Pager page={page} lastPage={list.data.last_page} href={href} label={t("admin.users.pages")} />}

      <Card id="new-user" title={t("admin.users.new")} class="admin-form">
        <form method="post" action={USERS}>
          {shown.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
          <FormToken signedIn={c.get("signedIn")} />
          <TextInput
            name="username"
            label={t("admin.users.username")}
            hint={t("admin.users.username.hint")}
            value={v.username}
            error={e.username}
            attrs={{ required: true, maxlength: 64 }}
          />
          <TextInput name="email" type="email" label={t("admin.users.email")} value={v.email} error={e.email} attrs={{ required: true, maxlength: 254 }} />
          <GroupSelect groups={groups} selected={v.group_id} error={e.group_id} />
          <RadioGroup name="role" legend={t("admin.users.role")} value={v.role === "admin" ? "admin" : "user"} options={roleOptions()} />
          <p class="muted small">{t("admin.users.create.then")}</p>
          <button type="submit" class="primary">
            {t("admin.users.create")}
          </button>
        </form>
      </Card>
    </AdminLayout>,
    status,
  );
}

async function renderUser(
  c: Context<SignedInEnv>,
  id: number,
  shown: Shown = NOTHING_SHOWN(),
  status: 200 | 400 | 404 | 422 = 200,
  link?: { url: string; expired_at: string },
) {
  const [answer, groups] = await Promise.all([adminApi<AdminUser>(c, "GET", `/api/admin/users/${id}`), groupsFor(c)]);
  if (!answer.ok)
    return c.html(
      <AdminLayout title={t("admin.users.notFound")} signedIn={c.get("signedIn")} section="users">
        <Notice kind="error">{answer.message}</Notice>
        <p>
          <a href={USERS}>← {t("admin.users.all")}</a>
        </p>
      </AdminLayout>,
      404,
    );
  const u = answer.data;
  return c.html(
    <AdminLayout title={t("admin.users.user", { name: u.username })} signedIn={c.get("signedIn")} section="users">
      <UserPage user={u} groups={groups} shown={shown} link={link} notice={status === 200 ? noticeOf(c) : undefined} signedIn={c.get("signedIn")} />
    </AdminLayout>,
    status,
  );
}

/** The user id of a path: digits in PostgreSQL's integer range, else 0 (no such user). */
const idOf = (value: string) => {
  const id = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  return id >= 1 && id <= 2_147_483_647 ? id : 0;
};

/** The account form's fields for the admin API: numbers as numbers, the capacity in KB (empty: null, the group's default). */
function editBody(form: FormFields) {
  const body: Record<string, unknown> = {};
  if (form.name !== undefined) body.name = form.name;
  if (form.email !== undefined) body.email = form.email;
  if (form.group_id !== undefined) body.group_id = numberOf(form.group_id, undefined);
  if (form.capacity_kb !== undefined) body.capacity_kb = sizeKbOf(form, "capacity_kb");
  if (form.enabled === "true" || form.enabled === "false") body.enabled = form.enabled === "true";
  if (form.role !== undefined) body.role = form.role;
  return body;
}

/** The form as sent, for a re-render: the capacity in KB when it reads as a size (never the password). */
function sentValues(form: FormFields): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of ["username", "email", "name", "group_id", "enabled", "role"])
    if (form[name] !== undefined) values[name] = formField(form, name).slice(0, 300);
  if (form.capacity_kb !== undefined) {
    const kb = sizeKbOf(form, "capacity_kb");
    values.capacity_kb = kb === null ? "" : String(kb);
  }
  return values;
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/users", requireAdminSession, (c) => renderList(c));

  web.post("/admin/users", requireAdminSession, async (c) => {
    const form = await readForm(c);
    const body = {
      username: formField(form, "username").trim(),
      email: formField(form, "email").trim(),
      role: form.role === "admin" ? "admin" : "user",
      ...(form.group_id ? { group_id: numberOf(form.group_id, undefined) } : {}),
    };
    const answer = await adminApi<AdminUser>(c, "POST", "/api/admin/users", body);
    if (!answer.ok) return renderList(c, { values: sentValues(form), errors: refused(answer) }, answer.status === 422 ? 422 : 400);
    return c.redirect(`${USERS}/${answer.data.id}?done=created`, 303);
  });

  web.get("/admin/users/:id", requireAdminSession, (c) => renderUser(c, idOf(c.req.param("id"))));

  web.post("/admin/users/:id/edit", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id"));
    const form = await readForm(c);
    const answer = await adminApi(c, "PATCH", `/api/admin/users/${id}`, editBody(form));
    if (!answer.ok) return renderUser(c, id, { values: sentValues(form), errors: refused(answer) }, statusOf(answer));
    return c.redirect(`${USERS}/${id}?done=saved`, 303);
  });

  web.post("/admin/users/:id/password", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id"));
    const answer = await adminApi(c, "PATCH", `/api/admin/users/${id}`, { password: formField(await readForm(c), "password") });
    if (!answer.ok) return renderUser(c, id, { values: {}, errors: refused(answer) }, statusOf(answer));
    return c.redirect(`${USERS}/${id}?done=password`, 303);
  });

  web.post("/admin/users/:id/password-link", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id"));
    const answer = await adminApi<{ url: string; expired_at: string }>(c, "POST", `/api/admin/users/${id}/password-link`);
    if (!answer.ok) return renderUser(c, id, { values: {}, errors: refused(answer) }, 404);
    c.header("Cache-Control", "no-store");
    return renderUser(c, id, NOTHING_SHOWN(), 200, answer.data);
  });

  web.post("/admin/users/:id/sign-out", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id"));
    const answer = await adminApi(c, "POST", `/api/admin/users/${id}/sign-out`);
    if (!answer.ok) return renderUser(c, id, { values: {}, errors: refused(answer) }, 404);
    return c.redirect(`${USERS}/${id}?done=signed-out`, 303);
  });

  web.post("/admin/users/:id/delete", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id"));
    const form = await readForm(c);
    const current = await adminApi<AdminUser>(c, "GET", `/api/admin/users/${id}`);
    if (!current.ok) return renderUser(c, id, NOTHING_SHOWN(), 404);
    if (formField(form, "confirm") !== current.data.username) {
      return renderUser(c, id, { values: {}, errors: { fields: {}, form: t("admin.users.delete.tick") } }, 400);
    }
    const answer = await adminApi(c, "DELETE", `/api/admin/users/${id}`);
    if (!answer.ok) return renderUser(c, id, { values: {}, errors: refused(answer) }, 400);
    return c.redirect(`${USERS}?done=deleted`, 303);
  });
}
