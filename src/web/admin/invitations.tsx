/**
 * Invitations, /user/admin/invitations: make links to sign up while registration is closed (uses, expiry, group),
 * see how many were used, withdraw one. Reads and changes go through the admin API in-process (api.ts), so its
 * validation, messages and audit log apply; the code is shown once, when it is made.
 */
import type { Context, Hono } from "hono";
import { listGroups } from "../../db/repositories/groups.ts";
import { parseDateTime } from "../../http/time.ts";
import {
  Card,
  Cell,
  ConfirmButton,
  ConfirmPage,
  CopyField,
  DurationInput,
  durationOf,
  EmptyState,
  FormToken,
  Notice,
  Select,
  Table,
  TextInput,
  UtcTime,
} from "../components/index.ts";
import { formField, readForm } from "../form.ts";
import { type MessageKey, num, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi, formErrors } from "./api.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const PAGE = `${ADMIN}/invitations`;
const API = "/api/admin/invitations";
const WEEK = 7 * 86_400;

interface ApiInvitation {
  id: number;
  group_id: number;
  max_uses: number;
  uses: number;
  note: string;
  status: "active" | "used_up" | "expired" | "revoked";
  expired_at: string;
  revoked_at: string | null;
  created_at: string;
}

interface Made {
  url: string;
}

interface PageState {
  made?: Made;
  notice?: string;
  errors?: Record<string, string>;
  form?: string;
  values?: { group_id?: string; max_uses?: string; note?: string; expires_in?: number };
}

async function render(c: Context<SignedInEnv>, state: PageState = {}, status: 200 | 422 | 400 = 200) {
  const signedIn = c.get("signedIn");
  const { db } = c.get("deps");
  const [answer, groups] = await Promise.all([adminApi<{ invitations: ApiInvitation[] }>(c, "GET", `${API}?per_page=100`), listGroups(db, 500, 0)]);
  const rows = answer.ok ? answer.data.invitations : [];
  const usable = groups.rows.filter((g) => !g.isGuest);
  const groupName = new Map(groups.rows.map((g) => [g.id, g.name]));
  const v = state.values ?? {};
  const errors = state.errors ?? {};
  const date = (s: string) => {
    const d = parseDateTime(s);
    return d ? <UtcTime at={d} /> : s;
  };
  return c.html(
    <AdminLayout title={t("mail.admin.invitations.title")} signedIn={signedIn} section="invitations">
      {state.notice && <Notice kind="success">{state.notice}</Notice>}
      {state.form && <Notice kind="error">{state.form}</Notice>}
      {state.made && (
        <Card id="made" title={t("mail.admin.invitations.made")}>
          <p>{t("mail.admin.invitations.shownOnce")}</p>
          <CopyField id="invitation-url" label={t("mail.admin.invitations.link")} text={state.made.url} />
        </Card>
      )}
      <Card id="new" title={t("mail.admin.invitations.new")}>
        <form method="post" action={PAGE} novalidate>
          <FormToken signedIn={signedIn} />
          <Select
            name="group_id"
            label={t("mail.admin.invitations.group")}
            options={usable.map((g) => [String(g.id), g.name] as const)}
            value={v.group_id ?? String(usable.find((g) => g.isDefault)?.id ?? "")}
            error={errors.group_id}
          />
          <TextInput
            name="max_uses"
            type="number"
            label={t("mail.admin.invitations.maxUses")}
            value={v.max_uses ?? "1"}
            error={errors.max_uses}
            attrs={{ min: 1, max: 10000, required: true, inputmode: "numeric" }}
          />
          <DurationInput
            name="expires_in"
            label={t("mail.admin.invitations.validFor")}
            seconds={v.expires_in ?? WEEK}
            presets={[86_400, WEEK, 30 * 86_400]}
            error={errors.expires_in}
          />
          <TextInput name="note" label={t("mail.admin.invitations.note")} value={v.note ?? ""} error={errors.note} attrs={{ maxlength: 200 }} />
          <button type="submit" class="primary">
            {t("mail.admin.invitations.make")}
          </button>
        </form>
      </Card>
      <Card id="list" title={t("mail.admin.invitations.list")}>
        {rows.length === 0 ? (
          <EmptyState>{t("mail.admin.invitations.none")}</EmptyState>
        ) : (
          <Table
            label={t("mail.admin.invitations.list")}
            columns={[
              t("mail.admin.invitations.note"),
              t("mail.admin.invitations.group"),
              t("mail.admin.invitations.uses"),
              t("mail.admin.invitations.expires"),
              t("mail.admin.invitations.status"),
              { hidden: t("mail.admin.invitations.actions") },
            ]}
          >
            {rows.map((i) => (
              <tr>
                <Cell label={t("mail.admin.invitations.note")}>{i.note || "—"}</Cell>
                <Cell label={t("mail.admin.invitations.group")}>{groupName.get(i.group_id) ?? `#${i.group_id}`}</Cell>
                <Cell label={t("mail.admin.invitations.uses")}>{t("mail.admin.invitations.usesOf", { uses: num(i.uses), max: num(i.max_uses) })}</Cell>
                <Cell label={t("mail.admin.invitations.expires")}>{date(i.expired_at)}</Cell>
                <Cell label={t("mail.admin.invitations.status")}>{t(`mail.admin.invitations.status.${i.status}` as MessageKey)}</Cell>
                <Cell>
                  {i.status === "active" && (
                    <ConfirmButton
                      action={`${PAGE}/${i.id}/revoke`}
                      question={t("mail.admin.invitations.revokeQuestion")}
                      signedIn={signedIn}
                      label={t("mail.admin.invitations.revoke")}
                      small
                    />
                  )}
                </Cell>
              </tr>
            ))}
          </Table>
        )}
      </Card>
    </AdminLayout>,
    status,
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/invitations", requireAdminSession, (c) => render(c));

  web.post("/admin/invitations", requireAdminSession, async (c) => {
    const form = await readForm(c);
    const values = {
      group_id: formField(form, "group_id"),
      max_uses: formField(form, "max_uses").trim(),
      note: formField(form, "note").trim(),
    };
    const expires = durationOf(form, "expires_in");
    const errors: Record<string, string> = {};
    if (!/^\d{1,5}$/.test(values.max_uses)) errors.max_uses = t("mail.admin.invitations.badUses");
    if (typeof expires !== "number") errors.expires_in = t("mail.admin.invitations.badDuration");
    if (Object.keys(errors).length) return render(c, { errors, values: { ...values, expires_in: WEEK } }, 422);
    const answer = await adminApi<Made>(c, "POST", API, {
      group_id: Number(values.group_id) || undefined,
      max_uses: Number(values.max_uses),
      expires_in: expires as number,
      note: values.note,
    });
    if (!answer.ok) {
      const { fields, form: whole } = formErrors(answer);
      return render(c, { errors: fields, form: whole, values: { ...values, expires_in: expires as number } }, answer.status === 422 ? 422 : 400);
    }
    return render(c, { made: answer.data });
  });

  web.post("/admin/invitations/:id{[0-9]+}/revoke", requireAdminSession, async (c) => {
    if (formField(await readForm(c), "confirmed") !== "1") {
      const signedIn = c.get("signedIn");
      return c.html(
        <ConfirmPage
          title={t("mail.admin.invitations.revoke")}
          signedIn={signedIn}
          action={`${PAGE}/${c.req.param("id")}/revoke`}
          confirmLabel={t("mail.admin.invitations.revoke")}
          cancel={PAGE}
          frame={({ title, children }) => (
            <AdminLayout title={title} signedIn={signedIn} section="invitations">
              {children}
            </AdminLayout>
          )}
        >
          <p>{t("mail.admin.invitations.revokeQuestion")}</p>
        </ConfirmPage>,
      );
    }
    const answer = await adminApi(c, "DELETE", `${API}/${c.req.param("id")}`);
    if (!answer.ok) return render(c, { form: answer.message }, 400);
    return render(c, { notice: t("mail.admin.invitations.revoked") });
  });
}
