/**
 * One account on the admin Users page: its figures, the account form (name, email, group, capacity as a size with a
 * unit, status, role), a password or a one-time link to set one, revoking its tokens and sessions, and its delete
 * (after saying what happens to the images). The forms post to users.tsx, which calls the admin API.
 */
import { Card, CopyField, formatBytes, FormToken, Notice, PasswordInput, RadioGroup, Select, SizeInput, TextInput, UtcTime } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";
import type { Shown } from "./form-kit.ts";
import { ADMIN } from "./layout.tsx";

export const USERS = `${ADMIN}/users`;

/** A user as the admin API answers it. */
export interface AdminUser {
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

export interface GroupChoice {
  id: number;
  name: string;
  isDefault: boolean;
  defaultCapacityKb: number;
}

/** The group choice: every group but the guests', the default one marked. */
export function GroupSelect({ groups, selected, error }: { groups: GroupChoice[]; selected?: string; error?: string }) {
  const value = selected ?? String(groups.find((g) => g.isDefault)?.id ?? "");
  return (
    <Select
      name="group_id"
      label={t("admin.users.group")}
      value={value}
      error={error}
      options={groups.map((g) => [String(g.id), t("admin.users.groupOption", { name: g.name, id: g.id, isDefault: g.isDefault ? "yes" : "no" })] as const)}
    />
  );
}

export const roleOptions = () =>
  [
    ["user", t("admin.users.role.user")],
    ["admin", t("admin.users.role.admin")],
  ] as const;

/** The account form's values of a stored user (a re-render shows what was sent instead). */
export const valuesOf = (u: AdminUser): Record<string, string> => ({
  name: u.name,
  email: u.email,
  group_id: String(u.group_id),
  capacity_kb: u.capacity_kb === null ? "" : String(u.capacity_kb),
  enabled: String(u.enabled),
  role: u.role,
});

function AccountForm({ user, groups, shown, signedIn }: { user: AdminUser; groups: GroupChoice[]; shown: Shown; signedIn: SignedIn }) {
  const v = { ...valuesOf(user), ...shown.values };
  const e = shown.errors.fields;
  const group = groups.find((g) => String(g.id) === v.group_id);
  const capacity = /^\d{1,15}$/.test(v.capacity_kb ?? "") ? Number(v.capacity_kb) : (v.capacity_kb ?? null);
  return (
    <form class="card admin-form" method="post" action={`${USERS}/${user.id}/edit`} aria-labelledby="account-title">
      <h2 id="account-title">{t("admin.users.account")}</h2>
      <FormToken signedIn={signedIn} />
      <TextInput name="name" label={t("admin.users.name")} value={v.name} error={e.name} attrs={{ required: true, maxlength: 100 }} />
      <TextInput name="email" type="email" label={t("admin.users.email")} value={v.email} error={e.email} attrs={{ required: true, maxlength: 254 }} />
      <GroupSelect groups={groups} selected={v.group_id} error={e.group_id} />
      <SizeInput
        name="capacity_kb"
        label={t("admin.users.capacity")}
        kb={capacity === "" ? null : capacity}
        error={e.capacity_kb}
        hint={group ? t("admin.users.capacity.hint", { size: formatBytes(group.defaultCapacityKb * 1024) }) : t("admin.users.capacity.hintNoGroup")}
      />
      <RadioGroup
        name="enabled"
        legend={t("admin.users.status")}
        value={v.enabled}
        hint={t("admin.users.status.hint")}
        options={[
          ["true", t("admin.users.status.enabled")],
          ["false", t("admin.users.status.disabled")],
        ]}
      />
      <RadioGroup name="role" legend={t("admin.users.role")} value={v.role} options={roleOptions()} hint={t("admin.users.role.adminHint")} />
      <div class="buttons">
        <button type="submit" class="primary">
          {t("admin.users.save")}
        </button>
      </div>
    </form>
  );
}

function PasswordCard({ user, error, link, signedIn }: { user: AdminUser; error?: string; link?: { url: string; expired_at: string }; signedIn: SignedIn }) {
  return (
    <Card id="password" title={t("admin.users.password")}>
      <form method="post" action={`${USERS}/${user.id}/password`}>
        <FormToken signedIn={signedIn} />
        <PasswordInput name="password" label={t("admin.users.password.new")} hint={t("admin.users.password.hint")} error={error} purpose="new" />
        <button type="submit">{t("admin.users.password.set")}</button>
      </form>
      <form method="post" action={`${USERS}/${user.id}/password-link`}>
        <FormToken signedIn={signedIn} />
        <p>{t("admin.users.link.intro")}</p>
        <button type="submit">{t("admin.users.link.make")}</button>
      </form>
      {link && (
        <div class="notice success" role="status">
          <p>{rich("admin.users.link.give", { name: user.username, time: <UtcTime at={new Date(link.expired_at)} /> })}</p>
          <CopyField id="link" label={t("admin.users.link.label")} text={link.url} />
        </div>
      )}
    </Card>
  );
}

export function UserPage({
  user,
  groups,
  shown,
  link,
  notice,
  signedIn,
}: {
  user: AdminUser;
  groups: GroupChoice[];
  shown: Shown;
  link?: { url: string; expired_at: string };
  notice?: string;
  signedIn: SignedIn;
}) {
  const action = (what: string) => `${USERS}/${user.id}/${what}`;
  const strong = (chunks: unknown) => <strong>{chunks}</strong>;
  return (
    <>
      <p>
        <a href={USERS}>← {t("admin.users.all")}</a>
      </p>
      {notice && <Notice kind="success">{notice}</Notice>}
      {shown.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
      <p class="muted">
        {t("admin.users.summary", {
          id: user.id,
          images: t("common.count.images", { count: user.image_num }),
          albums: t("common.count.albums", { count: user.album_num }),
          used: formatBytes(user.used_kb * 1024),
          ip: user.registered_ip || t("admin.users.unknownAddress"),
        })}
      </p>
      <AccountForm user={user} groups={groups} shown={shown} signedIn={signedIn} />
      <PasswordCard user={user} error={shown.errors.fields.password} link={link} signedIn={signedIn} />
      <Card id="access" title={t("admin.users.access")}>
        <form method="post" action={action("sign-out")}>
          <FormToken signedIn={signedIn} />
          <p>{t("admin.users.access.text")}</p>
          <button type="submit" class="danger">
            {t("admin.users.access.button")}
          </button>
        </form>
      </Card>
      <Card id="delete" title={t("admin.users.delete")}>
        <form method="post" action={action("delete")}>
          <FormToken signedIn={signedIn} />
          <p>{rich("admin.users.delete.text", { name: user.username, count: user.image_num, strong })}</p>
          <div class="field checkbox">
            <label for="confirm-delete">
              <input type="checkbox" id="confirm-delete" name="confirm" value={user.username} required />{" "}
              <span>{t("admin.users.delete.confirm", { name: user.username })}</span>
            </label>
          </div>
          <button type="submit" class="danger">
            {t("admin.users.delete.button")}
          </button>
        </form>
      </Card>
    </>
  );
}
