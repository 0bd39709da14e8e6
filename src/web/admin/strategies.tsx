/**
 * Strategies: the storage strategies with their used space and quota, forms for local and S3 strategies,
 * and a Test button per strategy that runs the readiness probe on its storage (POST /api/admin/strategies/{id}/test).
 * Every change goes through adminApi (the API's validation, messages and audit log). Secrets (the S3 access key id
 * and secret access key) are write-only: the page says whether they are set, never what they are; an empty field on
 * edit keeps the stored one, a check box clears it.
 */
import type { Context, Hono } from "hono";
import { getStrategy, listStrategiesPage, type Strategy } from "../../db/repositories/strategies.ts";
import { notFound } from "../../errors.ts";
import { type FormFields, formField, readForm } from "../form.ts";
import { FormToken, formatBytes, Notice } from "../components/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { type ApiAnswer, adminApi } from "./api.ts";
import { Checkbox, errorsOf, Input, numberOf, pageOf, recordIdOf, type Shown } from "./groups.tsx";
import { ADMIN, AdminLayout } from "./layout.tsx";

const STRATEGIES = `${ADMIN}/strategies`;
const PER_PAGE = 100;

type Driver = "local" | "s3";
const DRIVERS: Record<Driver, string> = { local: "Local disk", s3: "S3-compatible" };
const isDriver = (d: string | undefined): d is Driver => d === "local" || d === "s3";

/** The configuration fields of each driver, secrets last. */
const CONFIG: Record<Driver, readonly string[]> = {
  local: ["root", "url"],
  s3: ["bucket", "url", "endpoint", "region", "prefix", "access_key_id", "secret_access_key"],
};
/** Configuration fields that are written, never shown. */
const SECRETS = ["access_key_id", "secret_access_key"] as const;
const isSecret = (f: string) => (SECRETS as readonly string[]).includes(f);
const CLEAR = "clear_";
const FIELDS = ["name", "quota_kb", "enabled", ...new Set([...CONFIG.local, ...CONFIG.s3])];

const SECRET_LABELS: Record<(typeof SECRETS)[number], string> = { access_key_id: "Access key id", secret_access_key: "Secret access key" };

/** The form's values of a stored strategy: everything but its secrets. */
function valuesOf(s: Strategy): Record<string, string> {
  const values: Record<string, string> = { name: s.name, quota_kb: s.quotaKb === null ? "" : String(s.quotaKb), enabled: s.enabled ? "1" : "" };
  for (const f of CONFIG[s.driver]) {
    const v = s.config[f];
    if (!isSecret(f) && typeof v === "string") values[f] = v;
  }
  return values;
}

/** The form as sent, for a re-render: never its secrets. */
function sentValues(form: FormFields): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [k, v] of Object.entries(form)) if (k !== "_csrf" && !isSecret(k)) values[k] = v.slice(0, 2048);
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
  return { name: formField(form, "name").trim(), quota_kb: numberOf(formField(form, "quota_kb"), null), enabled: formField(form, "enabled") === "1", config };
}

function StrategyForm({ c, driver, strategy, shown }: { c: Context<SignedInEnv>; driver: Driver; strategy: Strategy | null; shown: Shown }) {
  const p = "strategy";
  const fieldCount = Object.keys(shown.errors.fields).length;
  return (
    <form class="card admin-form" method="post" action={strategy ? `${STRATEGIES}/${strategy.id}` : STRATEGIES} autocomplete="off">
      <FormToken signedIn={c.get("signedIn")} />
      {!strategy && <input type="hidden" name="driver" value={driver} />}
      {shown.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
      {fieldCount > 0 && <Notice kind="error">The strategy was not saved: see the fields marked below.</Notice>}
      <p>
        Driver: <strong>{DRIVERS[driver]}</strong>
        {strategy && <span class="hint"> (to store elsewhere with another driver, create a new strategy: changing it would strand the stored images)</span>}
      </p>
      <Input
        name="name"
        label="Name"
        shown={shown}
        idPrefix={p}
        required
        maxlength={100}
        hint="1 to 100 characters; users see it when they choose where to upload."
      />
      <Input name="quota_kb" label="Quota (KB)" type="number" min={0} shown={shown} idPrefix={p} hint="The most this storage may hold. Empty: unlimited." />
      <Checkbox
        name="enabled"
        label="Enabled"
        shown={shown}
        idPrefix={p}
        hint="A disabled strategy takes no uploads and is not probed by the readiness check."
      />
      {driver === "local" ? (
        <fieldset class="admin-fieldset">
          <legend>Local disk</legend>
          <Input name="root" label="Directory" shown={shown} idPrefix={p} hint="Where the files are written. Empty: DATA_DIR/uploads." />
          <Input
            name="url"
            label="Public address"
            type="url"
            shown={shown}
            idPrefix={p}
            hint="The address prefix of the files. Empty: BASE_URL/i (served by this server)."
          />
        </fieldset>
      ) : (
        <fieldset class="admin-fieldset">
          <legend>S3-compatible storage</legend>
          <Input name="bucket" label="Bucket" shown={shown} idPrefix={p} required />
          <Input
            name="url"
            label="Public address"
            type="url"
            shown={shown}
            idPrefix={p}
            required
            hint="The address prefix under which the bucket's objects are served."
          />
          <Input name="endpoint" label="Endpoint" type="url" shown={shown} idPrefix={p} hint="Empty: AWS S3." />
          <Input name="region" label="Region" shown={shown} idPrefix={p} />
          <Input name="prefix" label="Key prefix" shown={shown} idPrefix={p} hint="Objects are stored under it. Empty: the bucket's root." />
          {SECRETS.map((f) => {
            const set = typeof strategy?.config[f] === "string" && strategy.config[f] !== "";
            return (
              <div class="admin-secret">
                <Input
                  name={f}
                  label={SECRET_LABELS[f]}
                  type="password"
                  autocomplete="new-password"
                  writeOnly
                  shown={shown}
                  idPrefix={p}
                  hint={
                    strategy
                      ? `${set ? "Set" : "Not set"}. Never shown. Type a new one to replace it; leave empty to keep it.`
                      : "Never shown again once saved. Empty: the environment's credentials."
                  }
                />
                {strategy && set && (
                  <Checkbox
                    name={`${CLEAR}${f}`}
                    label={`Clear the stored ${SECRET_LABELS[f].toLowerCase()}`}
                    shown={{ values: {}, errors: { fields: {} } }}
                    idPrefix={p}
                  />
                )}
              </div>
            );
          })}
          {Object.keys(shown.values).length > 0 && !strategy && fieldCount > 0 && <p class="hint">Secrets are not kept after a refusal: type them again.</p>}
        </fieldset>
      )}
      <div class="buttons admin-buttons">
        <button type="submit" class="primary">
          {strategy ? "Save the strategy" : "Create the strategy"}
        </button>
        <a class="button" href={STRATEGIES}>
          Cancel
        </a>
      </div>
    </form>
  );
}

type FormStatus = 200 | 400 | 404 | 415 | 422;

function renderForm(c: Context<SignedInEnv>, driver: Driver, strategy: Strategy | null, shown: Shown, status: FormStatus = 200, notice?: string) {
  return c.html(
    <AdminLayout
      title={strategy ? `Strategy: ${strategy.name}` : `New ${DRIVERS[driver].toLowerCase()} strategy`}
      signedIn={c.get("signedIn")}
      section="strategies"
    >
      <p>
        <a href={STRATEGIES}>← All strategies</a>
      </p>
      {notice && <Notice kind="success">{notice}</Notice>}
      <StrategyForm c={c} driver={driver} strategy={strategy} shown={shown} />
    </AdminLayout>,
    status,
  );
}

/** Where a strategy stores, in words, without its secrets. */
function whereOf(s: Strategy): string {
  const text = (f: string) => (typeof s.config[f] === "string" ? (s.config[f] as string) : "");
  if (s.driver === "local") return text("root") || "DATA_DIR/uploads";
  const endpoint = text("endpoint");
  return `${text("bucket")}${text("prefix") ? `/${text("prefix")}` : ""}${endpoint ? ` at ${endpoint}` : ""}`;
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
  const done = c.req.query("done");
  return c.html(
    <AdminLayout title="Strategies" signedIn={signedIn} section="strategies">
      {!tested && done === "created" && <Notice kind="success">Strategy created.</Notice>}
      {tested &&
        (tested.writable ? (
          <Notice kind="success">{`Test of strategy #${tested.strategy.id} "${tested.strategy.name}": its storage is writable (a probe object was written and removed).`}</Notice>
        ) : (
          <Notice kind="error">{`Test of strategy #${tested.strategy.id} "${tested.strategy.name}": its storage is not writable: ${tested.reason ?? "no reason given"}.`}</Notice>
        ))}
      <ul class="actions">
        <li>
          <a class="button primary" href={`${STRATEGIES}/new?driver=local`}>
            New local strategy
          </a>
        </li>
        <li>
          <a class="button" href={`${STRATEGIES}/new?driver=s3`}>
            New S3 strategy
          </a>
        </li>
      </ul>
      {rows.length === 0 ? (
        <p class="card">No strategies yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="list stack admin-table" aria-label="Storage strategies">
            <thead>
              <tr>
                <th scope="col">Strategy</th>
                <th scope="col">Driver</th>
                <th scope="col">Where</th>
                <th scope="col">Used</th>
                <th scope="col">Quota</th>
                <th scope="col">Test</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((s) => (
                <tr>
                  <td data-label="Strategy">
                    <a href={`${STRATEGIES}/${s.id}`} aria-label={`Edit the strategy ${s.name}`}>
                      {s.name}
                    </a>{" "}
                    <span class="hint">#{s.id}</span>
                    {!s.enabled && <span class="badge">disabled</span>}
                  </td>
                  <td data-label="Driver">{DRIVERS[s.driver]}</td>
                  <td data-label="Where" class="admin-where">
                    {whereOf(s)}
                  </td>
                  <td data-label="Used">{formatBytes(s.usedBytes)}</td>
                  <td data-label="Quota">
                    {s.quotaKb === null
                      ? "unlimited"
                      : `${formatBytes(s.quotaKb * 1024)}${s.quotaKb > 0 ? ` (${Math.min(999, Math.round((s.usedBytes / (s.quotaKb * 1024)) * 100))}% used)` : ""}`}
                  </td>
                  <td data-label="Test">
                    <form method="post" action={`${STRATEGIES}/${s.id}/test`} class="inline">
                      <FormToken signedIn={signedIn} />
                      <button type="submit" class="small" aria-label={`Test the storage of ${s.name}`}>
                        Test
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {last > 1 && (
        <nav class="pages" aria-label="Pages of strategies">
          {page > 1 ? <a href={`${STRATEGIES}?page=${page - 1}`}>Previous</a> : <span></span>}
          <span>{`Page ${page} of ${last}`}</span>
          {page < last ? <a href={`${STRATEGIES}?page=${page + 1}`}>Next</a> : <span></span>}
        </nav>
      )}
    </AdminLayout>,
  );
}

async function strategyOf(c: Context<SignedInEnv>) {
  const strategy = await getStrategy(c.get("deps").db, recordIdOf(c.req.param("id") ?? "", "strategy"));
  if (!strategy) throw notFound("There is no such strategy.");
  return strategy;
}

const statusOf = (answer: ApiAnswer): FormStatus => ([400, 404, 415, 422].includes(answer.status) ? (answer.status as FormStatus) : 422);

/** Saves the form through the admin API; a refusal re-renders it with the API's messages (and without the secrets sent). */
async function save(c: Context<SignedInEnv>, driver: Driver, current: Strategy | null) {
  const form = await readForm(c);
  const input = inputOf(form, driver, current);
  const answer = current
    ? await adminApi(c, "PATCH", `/api/admin/strategies/${current.id}`, input)
    : await adminApi(c, "POST", "/api/admin/strategies", { ...input, driver });
  if (!answer.ok) {
    if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return renderForm(c, driver, current, { values: sentValues(form), errors: errorsOf(answer, FIELDS, "config.") }, statusOf(answer));
  }
  return c.redirect(current ? `${STRATEGIES}/${current.id}?done=saved` : `${STRATEGIES}?done=created`, 303);
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/strategies", requireAdminSession, (c) => renderList(c));
  web.get("/admin/strategies/new", requireAdminSession, (c) => {
    const driver = c.req.query("driver");
    return renderForm(c, isDriver(driver) ? driver : "local", null, { values: { enabled: "1" }, errors: { fields: {} } });
  });
  web.post("/admin/strategies", requireAdminSession, async (c) => {
    const driver = formField(await readForm(c), "driver");
    if (!isDriver(driver))
      return renderForm(c, "local", null, { values: sentValues(await readForm(c)), errors: { fields: {}, form: "Choose the driver: local or s3." } }, 422);
    return save(c, driver, null);
  });
  web.get("/admin/strategies/:id", requireAdminSession, async (c) => {
    const strategy = await strategyOf(c);
    return renderForm(
      c,
      strategy.driver,
      strategy,
      { values: valuesOf(strategy), errors: { fields: {} } },
      200,
      c.req.query("done") === "saved" ? "Strategy saved." : undefined,
    );
  });
  web.post("/admin/strategies/:id", requireAdminSession, async (c) => {
    const strategy = await strategyOf(c);
    return save(c, strategy.driver, strategy);
  });
  web.post("/admin/strategies/:id/test", requireAdminSession, async (c) => {
    const strategy = await strategyOf(c);
    const answer = await adminApi<{ writable: boolean; reason?: string }>(c, "POST", `/api/admin/strategies/${strategy.id}/test`);
    if (answer.status === 404) throw notFound("There is no such strategy.");
    if (!answer.ok) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return renderList(c, { strategy, writable: answer.data.writable, reason: answer.data.reason });
  });
}
