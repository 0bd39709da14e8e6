/**
 * Strategies: the storage strategies with their used space and quota, the forms of local and S3 strategies
 * (strategy-form.tsx), and a Test button per strategy that runs the readiness probe on its storage
 * (POST /api/admin/strategies/{id}/test). Every change goes through adminApi (the API's validation, messages and
 * audit log); the quota is in KB, MB or GB on the form, KB in the API.
 */
import type { Context, Hono } from "hono";
import { getStrategy, listStrategiesPage, type Strategy } from "../../db/repositories/strategies.ts";
import { notFound } from "../../errors.ts";
import { Cell, EmptyState, FormToken, formatBytes, Notice, Pager, sizeKbOf, Table } from "../components/index.ts";
import { type FormFields, formField, readForm } from "../form.ts";
import { t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { errorsOf, type FormStatus, NOTHING_SHOWN, pageOf, recordIdOf, type Shown, statusOf, tk } from "./form-kit.ts";
import { AdminLayout } from "./layout.tsx";
import { CLEAR, CONFIG, type Driver, driverName, isDriver, isSecret, STRATEGIES, StrategyForm } from "./strategy-form.tsx";

const PER_PAGE = 100;
const FIELDS = ["name", "quota_kb", "enabled", ...new Set([...CONFIG.local, ...CONFIG.s3])];
const OWN_ERRORS = { quota_kb: () => t("admin.error.size", { range: "≥ 0 KB" }) };

/** The form's values of a stored strategy: everything but its secrets. */
function valuesOf(s: Strategy): Record<string, string> {
  const values: Record<string, string> = { name: s.name, quota_kb: s.quotaKb === null ? "" : String(s.quotaKb), enabled: s.enabled ? "1" : "" };
  for (const f of CONFIG[s.driver]) {
    const v = s.config[f];
    if (!isSecret(f) && typeof v === "string") values[f] = v;
  }
  return values;
}

/** The form as sent, for a re-render: never its secrets; the quota in KB when it reads as a size. */
function sentValues(form: FormFields): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [k, v] of Object.entries(form)) if (k !== "_csrf" && !isSecret(k)) values[k] = v.slice(0, 2048);
  const quota = sizeKbOf(form, "quota_kb");
  values.quota_kb = quota === null ? "" : String(quota);
  return values;
}

/** The StrategyInput of the form; on edit, an empty secret keeps the stored one unless its clear box is checked. */
function inputOf(form: FormFields, driver: Driver, current: Strategy | null): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const f of CONFIG[driver]) {
    const value = formField(form, f).trim();
    if (value !== "") config[f] = value;
    else if (isSecret(f) && current && formField(form, `${CLEAR}${f}`) !== "1" && typeof current.config[f] === "string") config[f] = current.config[f];
  }
  return { name: formField(form, "name").trim(), quota_kb: sizeKbOf(form, "quota_kb"), enabled: formField(form, "enabled") === "1", config };
}

function renderForm(c: Context<SignedInEnv>, driver: Driver, strategy: Strategy | null, shown: Shown, status: FormStatus = 200, notice?: string) {
  return c.html(
    <AdminLayout
      title={strategy ? t("admin.strategies.edit", { name: strategy.name }) : t("admin.strategies.new", { driver })}
      signedIn={c.get("signedIn")}
      section="strategies"
    >
      <p>
        <a href={STRATEGIES}>← {t("admin.strategies.all")}</a>
      </p>
      {notice && <Notice kind="success">{notice}</Notice>}
      <StrategyForm signedIn={c.get("signedIn")} driver={driver} strategy={strategy} shown={shown} />
    </AdminLayout>,
    status,
  );
}

/** Where a strategy stores, in words, without its secrets. */
function whereOf(s: Strategy): string {
  const text = (f: string) => (typeof s.config[f] === "string" ? (s.config[f] as string) : "");
  if (s.driver === "local") return text("root") || "DATA_DIR/uploads";
  const where = `${text("bucket")}${text("prefix") ? `/${text("prefix")}` : ""}`;
  return text("endpoint") ? t("admin.strategies.at", { where, endpoint: text("endpoint") }) : where;
}

function quotaText(s: Strategy) {
  if (s.quotaKb === null) return t("admin.unlimited");
  const quota = formatBytes(s.quotaKb * 1024);
  if (s.quotaKb === 0) return quota;
  return t("admin.strategies.quotaUsed", { quota, percent: Math.min(999, Math.round((s.usedBytes / (s.quotaKb * 1024)) * 100)) });
}

interface Tested {
  strategy: Strategy;
  writable: boolean;
  reason?: string;
}

async function renderList(c: Context<SignedInEnv>, tested?: Tested) {
  const signedIn = c.get("signedIn");
  const page = pageOf(c.req.query("page"));
  const { rows, total } = await listStrategiesPage(c.get("deps").db, PER_PAGE, (page - 1) * PER_PAGE);
  const last = Math.max(1, Math.ceil(total / PER_PAGE));
  const col = (k: string) => tk(`admin.strategies.col.${k}`);
  const which = tested && { id: tested.strategy.id, name: tested.strategy.name };
  return c.html(
    <AdminLayout title={t("admin.strategies.title")} signedIn={signedIn} section="strategies">
      {!tested && c.req.query("done") === "created" && <Notice kind="success">{t("admin.strategies.created")}</Notice>}
      {tested &&
        (tested.writable ? (
          <Notice kind="success">{t("admin.strategies.tested.ok", which)}</Notice>
        ) : (
          <Notice kind="error">{t("admin.strategies.tested.bad", { ...which, reason: tested.reason ?? t("admin.strategies.tested.noReason") })}</Notice>
        ))}
      <ul class="actions">
        <li>
          <a class="button primary" href={`${STRATEGIES}/new?driver=local`}>
            {t("admin.strategies.newLocal")}
          </a>
        </li>
        <li>
          <a class="button" href={`${STRATEGIES}/new?driver=s3`}>
            {t("admin.strategies.newS3")}
          </a>
        </li>
      </ul>
      {rows.length === 0 ? (
        <EmptyState>{t("admin.strategies.empty")}</EmptyState>
      ) : (
        <Table class="list admin-table" label={t("admin.strategies.list.label")} columns={["strategy", "driver", "where", "used", "quota", "test"].map(col)}>
          {rows.map((s) => (
            <tr>
              <Cell label={col("strategy")}>
                <a href={`${STRATEGIES}/${s.id}`} aria-label={t("admin.strategies.editLabel", { name: s.name })}>
                  {s.name}
                </a>{" "}
                <span class="hint">#{s.id}</span>
                {!s.enabled && <span class="badge">{t("admin.badge.disabled")}</span>}
              </Cell>
              <Cell label={col("driver")}>{driverName(s.driver)}</Cell>
              <Cell label={col("where")} class="admin-where">
                {whereOf(s)}
              </Cell>
              <Cell label={col("used")}>{formatBytes(s.usedBytes)}</Cell>
              <Cell label={col("quota")}>{quotaText(s)}</Cell>
              <Cell label={col("test")}>
                <form method="post" action={`${STRATEGIES}/${s.id}/test`} class="inline">
                  <FormToken signedIn={signedIn} />
                  <button type="submit" class="small" aria-label={t("admin.strategies.testLabel", { name: s.name })}>
                    {t("admin.strategies.test")}
                  </button>
                </form>
              </Cell>
            </tr>
          ))}
        </Table>
      )}
      {last > 1 && <Pager page={page} lastPage={last} href={(p) => `${STRATEGIES}?page=${p}`} label={t("admin.strategies.pages")} />}
    </AdminLayout>,
  );
}

async function strategyOf(c: Context<SignedInEnv>) {
  const strategy = await getStrategy(c.get("deps").db, recordIdOf(c.req.param("id") ?? "", "strategy"));
  if (!strategy) throw notFound(t("admin.noSuch", { what: "strategy" }));
  return strategy;
}

/** Saves the form through the admin API; a refusal re-renders it with the API's messages (and without the secrets sent). */
async function save(c: Context<SignedInEnv>, driver: Driver, current: Strategy | null) {
  const form = await readForm(c);
  const input = inputOf(form, driver, current);
  const answer = current
    ? await adminApi(c, "PATCH", `/api/admin/strategies/${current.id}`, input)
    : await adminApi(c, "POST", "/api/admin/strategies", { ...input, driver });
  if (!answer.ok) {
    if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return renderForm(c, driver, current, { values: sentValues(form), errors: errorsOf(answer, FIELDS, "config.", OWN_ERRORS) }, statusOf(answer));
  }
  return c.redirect(current ? `${STRATEGIES}/${current.id}?done=saved` : `${STRATEGIES}?done=created`, 303);
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/strategies", requireAdminSession, (c) => renderList(c));
  web.get("/admin/strategies/new", requireAdminSession, (c) => {
    const driver = c.req.query("driver");
    return renderForm(c, isDriver(driver) ? driver : "local", null, NOTHING_SHOWN({ enabled: "1" }));
  });
  web.post("/admin/strategies", requireAdminSession, async (c) => {
    const form = await readForm(c);
    const driver = formField(form, "driver");
    if (!isDriver(driver))
      return renderForm(c, "local", null, { values: sentValues(form), errors: { fields: {}, form: t("admin.strategies.chooseDriver") } }, 422);
    return save(c, driver, null);
  });
  web.get("/admin/strategies/:id", requireAdminSession, async (c) => {
    const strategy = await strategyOf(c);
    const notice = c.req.query("done") === "saved" ? t("admin.strategies.saved") : undefined;
    return renderForm(c, strategy.driver, strategy, NOTHING_SHOWN(valuesOf(strategy)), 200, notice);
  });
  web.post("/admin/strategies/:id", requireAdminSession, async (c) => {
    const strategy = await strategyOf(c);
    return save(c, strategy.driver, strategy);
  });
  web.post("/admin/strategies/:id/test", requireAdminSession, async (c) => {
    const strategy = await strategyOf(c);
    const answer = await adminApi<{ writable: boolean; reason?: string }>(c, "POST", `/api/admin/strategies/${strategy.id}/test`);
    if (answer.status === 404) throw notFound(t("admin.noSuch", { what: "strategy" }));
    if (!answer.ok) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return renderList(c, { strategy, writable: answer.data.writable, reason: answer.data.reason });
  });
}
