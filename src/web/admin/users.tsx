/**
 * Admin pages for accounts: search by name or email with pagination; create; edit group, capacity,
 * status, email, name and role; set a password or make a one-time link to set one; revoke the tokens and end the
 * sessions; delete (after saying what happens to the images). Every change goes through the admin API (api.ts).
 */
import type { Context, Hono } from "hono";
import { listGroups } from "../../db/repositories/groups.ts";
import { formatUtc } from "../../http/time.ts";
import { formField, readForm } from "../form.ts";
import { Field, FieldError, FormToken, formatBytes, Notice } from "../components/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi, formErrors } from "./api.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const PER_PAGE = 50;

interface AdminUser {
  id: number;
  username: string;
  name: string;
  email: string;
  group_id: number;
  enabled: boolean;
  capacity_kb: number | null;
  used_kb: number;
  image_num: number;
  album_num: number;
  registered_ip: string;
  role: "user" | "admin";
}

const NOTICES: Record<string, string> = {
  created: "User created.",
  saved: "Changes saved.",
  password: "Password set; the user's sessions have ended.",
  "signed-out": "The user's tokens are revoked and their sessions ended.",
  deleted: "User deleted, with their images.",
};

type Errors = { fields: Record<string, string>; form?: string };

const invalid = (errors: Errors | undefined, name: string) =>
  errors?.fields[name] ? { "aria-invalid": "true" as const, "aria-describedby": `${name}-error` } : {};

async function groupsFor(c: Context<SignedInEnv>) {
  return (await listGroups(c.get("deps").db, 500, 0)).rows.filter((g) => !g.isGuest);
}

function GroupSelect({ groups, selected, errors }: { groups: { id: number; name: string; isDefault: boolean }[]; selected?: number; errors?: Errors }) {
  return (
    <Field label="Group" id="group_id">
      <select id="group_id" name="group_id" {...invalid(errors, "group_id")}>
        {groups.map((g) => (
          <option value={String(g.id)} selected={selected === undefined ? g.isDefault : g.id === selected}>
            {`${g.name} (#${g.id})${g.isDefault ? ", default" : ""}`}
          </option>
        ))}
      </select>
      <FieldError id="group_id" error={errors?.fields.group_id} />
    </Field>
  );
}

/** The list: search, pages, and the form to create a user. */
async function renderList(c: Context<SignedInEnv>, created?: { values: Record<string, string>; errors: Errors }, status: 200 | 400 | 422 = 200) {
  const q = (c.req.query("q") ?? "").slice(0, 100);
  const pageParam = Number(c.req.query("page"));
  const page = Number.isInteger(pageParam) && pageParam >= 1 && pageParam <= 100_000 ? pageParam : 1;
  const query = new URLSearchParams({ page: String(page), per_page: String(PER_PAGE), ...(q ? { q } : {}) });
  const [list, groups] = await Promise.all([
    adminApi<{ users: AdminUser[]; last_page: number; total: number }>(c, "GET", `/api/admin/users?${query}`),
    groupsFor(c),
  ]);
  const users = list.ok ? list.data.users : [];
  const lastPage = list.ok ? list.data.last_page : 1;
  const href = (p: number) => `${ADMIN}/users?${new URLSearchParams({ page: String(p), ...(q ? { q } : {}) })}`;
  const done = c.req.query("done");
  const v = created?.values ?? {};
  const errors = created?.errors;
  return c.html(
    <AdminLayout title="Users" signedIn={c.get("signedIn")} section="users">
      {done && NOTICES[done] && <Notice kind="success">{NOTICES[done]}</Notice>}
      {!list.ok && <Notice kind="error">{list.message}</Notice>}
      <form method="get" action={`${ADMIN}/users`} class="toolbar" role="search">
        <label for="q">Search by username, name or email</label>
        <input id="q" name="q" type="search" value={q} maxlength={100} />
        <button type="submit">Search</button>
      </form>
      <p class="muted" data-testid="total">
        {list.ok ? `${list.data.total} users${q ? ` matching "${q}"` : ""}` : ""}
      </p>
      <table class="list stack">
        <thead>
          <tr>
            <th scope="col">User</th>
            <th scope="col">Email</th>
            <th scope="col">Group</th>
            <th scope="col">Status</th>
            <th scope="col">Images</th>
            <th scope="col">Used</th>
          </tr>
        </thead>
        <tbody>
          {users.map((u) => (
            <tr>
              <th scope="row">
                <a href={`${ADMIN}/users/${u.id}`}>{u.username}</a>
                {u.role === "admin" && <span class="badge">admin</span>}
              </th>
              <td data-label="Email">{u.email}</td>
              <td data-label="Group">{groups.find((g) => g.id === u.group_id)?.name ?? `#${u.group_id}`}</td>
              <td data-label="Status">{u.enabled ? "enabled" : "disabled"}</td>
              <td data-label="Images">{u.image_num}</td>
              <td data-label="Used">{formatBytes(u.used_kb * 1024)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <nav class="pages" aria-label="Pages">
        {page > 1 ? (
          <a href={href(page - 1)} rel="prev">
            ← Previous
          </a>
        ) : (
          <span></span>
        )}
        <span>
          Page {page} of {lastPage}
        </span>
        {page < lastPage ? (
          <a href={href(page + 1)} rel="next">
            Next →
          </a>
        ) : (
          <span></span>
        )}
      </nav>

      <form class="card" method="post" action={`${ADMIN}/users`}>
        <h2>New user</h2>
        {errors?.form && <Notice kind="error">{errors.form}</Notice>}
        <FormToken signedIn={c.get("signedIn")} />
        <Field label="Username" id="username" hint="2–64 letters, digits, '_', '.' or '-'">
          <input id="username" name="username" type="text" value={v.username ?? ""} required maxlength={64} {...invalid(errors, "username")} />
          <FieldError id="username" error={errors?.fields.username} />
        </Field>
        <Field label="Email" id="email">
          <input id="email" name="email" type="email" value={v.email ?? ""} required maxlength={254} {...invalid(errors, "email")} />
          <FieldError id="email" error={errors?.fields.email} />
        </Field>
        <GroupSelect groups={groups} selected={v.group_id ? Number(v.group_id) : undefined} errors={errors} />
        <fieldset>
          <legend>Role</legend>
          <label>
            <input type="radio" name="role" value="user" checked={v.role !== "admin"} /> User
          </label>
          <label>
            <input type="radio" name="role" value="admin" checked={v.role === "admin"} /> Administrator
          </label>
        </fieldset>
        <p class="muted small">Then set a password on the user's page, or make a one-time link for them to set it.</p>
        <button type="submit" class="primary">
          Create user
        </button>
      </form>
    </AdminLayout>,
    status,
  );
}

async function renderUser(
  c: Context<SignedInEnv>,
  id: number,
  shown: { errors?: Errors; values?: Record<string, string>; link?: { url: string; expired_at: string } } = {},
  status: 200 | 400 | 404 | 422 = 200,
) {
  const [answer, groups] = await Promise.all([adminApi<AdminUser>(c, "GET", `/api/admin/users/${id}`), groupsFor(c)]);
  if (!answer.ok)
    return c.html(
      <AdminLayout title="User not found" signedIn={c.get("signedIn")} section="users">
        <Notice kind="error">{answer.message}</Notice>
      </AdminLayout>,
      404,
    );
  const u = answer.data;
  const v = shown.values ?? {};
  const errors = shown.errors;
  const done = c.req.query("done");
  const signedIn = c.get("signedIn");
  const action = (what: string) => `${ADMIN}/users/${u.id}/${what}`;
  return c.html(
    <AdminLayout title={`User ${u.username}`} signedIn={signedIn} section="users">
      {done && NOTICES[done] && <Notice kind="success">{NOTICES[done]}</Notice>}
      {errors?.form && <Notice kind="error">{errors.form}</Notice>}
      <p class="muted">
        {`#${u.id} · ${u.image_num} images, ${u.album_num} albums, ${formatBytes(u.used_kb * 1024)} used · registered from ${u.registered_ip || "unknown"}`}
      </p>

      <form class="card" method="post" action={action("edit")}>
        <h2>Account</h2>
        <FormToken signedIn={signedIn} />
        <Field label="Display name" id="name">
          <input id="name" name="name" type="text" value={v.name ?? u.name} required maxlength={100} {...invalid(errors, "name")} />
          <FieldError id="name" error={errors?.fields.name} />
        </Field>
        <Field label="Email" id="email">
          <input id="email" name="email" type="email" value={v.email ?? u.email} required maxlength={254} {...invalid(errors, "email")} />
          <FieldError id="email" error={errors?.fields.email} />
        </Field>
        <GroupSelect groups={groups} selected={v.group_id ? Number(v.group_id) : u.group_id} errors={errors} />
        <Field label="Capacity (KB)" id="capacity_kb" hint="Empty: the group's default capacity">
          <input
            id="capacity_kb"
            name="capacity_kb"
            type="text"
            inputmode="numeric"
            value={v.capacity_kb ?? (u.capacity_kb === null ? "" : String(u.capacity_kb))}
            {...invalid(errors, "capacity_kb")}
          />
          <FieldError id="capacity_kb" error={errors?.fields.capacity_kb} />
        </Field>
        <fieldset>
          <legend>Status</legend>
          <label>
            <input type="radio" name="enabled" value="true" checked={(v.enabled ?? String(u.enabled)) === "true"} /> Enabled
          </label>
          <label>
            <input type="radio" name="enabled" value="false" checked={(v.enabled ?? String(u.enabled)) === "false"} /> Disabled (every API call refused,
            sessions ended)
          </label>
        </fieldset>
        <fieldset>
          <legend>Role</legend>
          <label>
            <input type="radio" name="role" value="user" checked={(v.role ?? u.role) === "user"} /> User
          </label>
          <label>
            <input type="radio" name="role" value="admin" checked={(v.role ?? u.role) === "admin"} /> Administrator (admin pages; sessions end after 30 idle
            minutes, 12 hours at most)
          </label>
        </fieldset>
        <button type="submit" class="primary">
          Save
        </button>
      </form>

      <section class="card" aria-labelledby="password-title">
        <h2 id="password-title">Password</h2>
        <form method="post" action={action("password")}>
          <FormToken signedIn={signedIn} />
          <Field label="New password" id="password" hint="At least 8 characters; the user's sessions end">
            <input id="password" name="password" type="password" autocomplete="new-password" required {...invalid(errors, "password")} />
            <FieldError id="password" error={errors?.fields.password} />
          </Field>
          <button type="submit">Set password</button>
        </form>
        <form method="post" action={action("password-link")}>
          <FormToken signedIn={signedIn} />
          <p>Or make a one-time link for the user to set their own password (valid for an hour, used once):</p>
          <button type="submit">Make a link</button>
        </form>
        {shown.link && (
          <div class="notice success" role="status">
            <p>
              Give this link to {u.username} over a channel you trust; it is shown once and expires at{" "}
              <time datetime={shown.link.expired_at}>{formatUtc(new Date(shown.link.expired_at))}</time>.
            </p>
            <label for="link">One-time link</label>
            <input id="link" readonly value={shown.link.url} />
          </div>
        )}
      </section>

      <section class="card" aria-labelledby="access-title">
        <h2 id="access-title">Tokens and sessions</h2>
        <form method="post" action={action("sign-out")}>
          <FormToken signedIn={signedIn} />
          <p>Revoke every API token of the user and end every signed-in session (their uploaders get 401 until given new tokens).</p>
          <button type="submit" class="danger">
            Revoke tokens and end sessions
          </button>
        </form>
      </section>

      <section class="card" aria-labelledby="delete-title">
        <h2 id="delete-title">Delete</h2>
        <form method="post" action={action("delete")}>
          <FormToken signedIn={signedIn} />
          <p>
            Deleting <strong>{u.username}</strong> deletes <strong>all {u.image_num} of their images</strong> (files, thumbnails and variants, as the API's
            delete does for each, freeing the strategies' quota), their albums, tokens and sessions, then the account. It cannot be undone.
          </p>
          <label>
            <input type="checkbox" name="confirm" value={u.username} required /> {`Yes, delete ${u.username} and their images`}
          </label>
          <button type="submit" class="danger">
            Delete user
          </button>
        </form>
      </section>
    </AdminLayout>,
    status,
  );
}

/** The user id of a path: digits in PostgreSQL's integer range, else none. */
const idOf = (value: string) => {
  const id = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  return id >= 1 && id <= 2_147_483_647 ? id : null;
};

/** The form's fields for the admin API: numbers as numbers, empty capacity as null (the group's default). */
function editBody(form: Record<string, string>) {
  const body: Record<string, unknown> = {};
  if (form.name !== undefined) body.name = form.name;
  if (form.email !== undefined) body.email = form.email;
  // a number the API judges (range, kind) as a number, so its message is about the value, not the type
  const number = (v: string) => (/^-?\d{1,15}$/.test(v.trim()) ? Number(v.trim()) : v);
  if (form.group_id !== undefined) body.group_id = number(form.group_id);
  if (form.capacity_kb !== undefined) body.capacity_kb = form.capacity_kb.trim() === "" ? null : number(form.capacity_kb);
  if (form.enabled === "true" || form.enabled === "false") body.enabled = form.enabled === "true";
  if (form.role !== undefined) body.role = form.role;
  return body;
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/users", requireAdminSession, (c) => renderList(c));

  web.post("/admin/users", requireAdminSession, async (c) => {
    const form = { ...(await readForm(c)) };
    const body = {
      username: formField(form, "username").trim(),
      email: formField(form, "email").trim(),
      role: form.role === "admin" ? "admin" : "user",
      ...(form.group_id ? { group_id: editBody(form).group_id } : {}),
    };
    const answer = await adminApi<AdminUser>(c, "POST", "/api/admin/users", body);
    if (!answer.ok) return renderList(c, { values: form, errors: formErrors(answer) }, answer.status === 422 ? 422 : 400);
    return c.redirect(`${ADMIN}/users/${answer.data.id}?done=created`, 303);
  });

  web.get("/admin/users/:id", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id"));
    if (id === null) return renderUser(c, 0);
    return renderUser(c, id);
  });

  web.post("/admin/users/:id/edit", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id")) ?? 0;
    const form = { ...(await readForm(c)) };
    const answer = await adminApi(c, "PATCH", `/api/admin/users/${id}`, editBody(form));
    if (!answer.ok) return renderUser(c, id, { values: form, errors: formErrors(answer) }, answer.status === 404 ? 404 : answer.status === 422 ? 422 : 400);
    return c.redirect(`${ADMIN}/users/${id}?done=saved`, 303);
  });

  web.post("/admin/users/:id/password", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id")) ?? 0;
    const answer = await adminApi(c, "PATCH", `/api/admin/users/${id}`, { password: formField(await readForm(c), "password") });
    if (!answer.ok) return renderUser(c, id, { errors: formErrors(answer) }, answer.status === 404 ? 404 : answer.status === 422 ? 422 : 400);
    return c.redirect(`${ADMIN}/users/${id}?done=password`, 303);
  });

  web.post("/admin/users/:id/password-link", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id")) ?? 0;
    const answer = await adminApi<{ url: string; expired_at: string }>(c, "POST", `/api/admin/users/${id}/password-link`);
    if (!answer.ok) return renderUser(c, id, { errors: formErrors(answer) }, 404);
    c.header("Cache-Control", "no-store");
    return renderUser(c, id, { link: answer.data });
  });

  web.post("/admin/users/:id/sign-out", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id")) ?? 0;
    const answer = await adminApi(c, "POST", `/api/admin/users/${id}/sign-out`);
    if (!answer.ok) return renderUser(c, id, { errors: formErrors(answer) }, 404);
    return c.redirect(`${ADMIN}/users/${id}?done=signed-out`, 303);
  });

  web.post("/admin/users/:id/delete", requireAdminSession, async (c) => {
    const id = idOf(c.req.param("id")) ?? 0;
    const form = await readForm(c);
    const current = await adminApi<AdminUser>(c, "GET", `/api/admin/users/${id}`);
    if (!current.ok) return renderUser(c, id, {}, 404);
    if (formField(form, "confirm") !== current.data.username) {
      return renderUser(c, id, { errors: { fields: {}, form: "Tick the box to confirm the deletion." } }, 400);
    }
    const answer = await adminApi(c, "DELETE", `/api/admin/users/${id}`);
    if (!answer.ok) return renderUser(c, id, { errors: formErrors(answer) }, 400);
    return c.redirect(`${ADMIN}/users?done=deleted`, 303);
  });
}
