/** What the sign-in steps and the Security page share: the relying party, the code throttles, the passkey script. */
import { assetFile } from "../components/assets.ts";
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { AppError } from "../../errors.ts";
import { addressBucket, clientIp, currentSettings } from "../../http/auth.ts";
import { FailedAuthThrottle, type Reservation, type ThrottleLimits } from "../../http/throttle.ts";
import type { SecretBox } from "../../webhooks/secret-box.ts";
import { relyingPartyOf } from "../../services/second-factors/passkeys.ts";
import { t } from "../i18n/index.ts";
import type { WebEnv } from "../session.ts";
import { identityOf } from "../site.ts";

/**
 * Wrong second-factor codes per account, whatever the address: 10 at once, then 2 a minute. With the per-address
 * throttle of failed authentications and five wrong codes per pending sign-in, guessing a 6-digit code (three
 * right at any time) stays hopeless: about 3 in 10^6 per try, 2 tries a minute.
 */
const CODE_FAILURES: ThrottleLimits = { burst: 10, perMinute: 2 };
const throttles = new WeakMap<Deps, FailedAuthThrottle>();

/** The per-account throttle of codes, one per app (its Deps). */
function accountThrottle(deps: Deps) {
  let found = throttles.get(deps);
  if (!found) {
    found = new FailedAuthThrottle(CODE_FAILURES, () => deps.clock().getTime());
    throttles.set(deps, found);
  }
  return found;
}

/** Takes a failure unit from the address and from the account (when known) before a code is checked; the wait when refused. */
export function reserveCodeTry<E extends WebEnv>(c: Context<E>, userId: number | null): { units: Reservation[] } | { seconds: string } {
  const units: Reservation[] = [];
  try {
    units.push(c.get("authThrottle").reserve(addressBucket(clientIp(c))));
    if (userId !== null) units.push(accountThrottle(c.get("deps")).reserve(`second-factor:${userId}`));
    return { units };
  } catch (e) {
    for (const unit of units) unit.refund();
    if (!(e instanceof AppError && e.status === 429)) throw e;
    return { seconds: e.headers?.["retry-after"] ?? "60" };
  }
}

/** The key that seals TOTP secrets: the webhook secrets' key (docs/decisions/sign-in-core.md). */
export function boxOf(deps: Deps): SecretBox {
  const box = deps.config.webhooks?.box;
  if (!box) throw new Error("no secret key is configured (WEBHOOK_SECRET_KEY or DATA_DIR/webhook-secret-key)");
  return box;
}

export async function relyingParty<E extends WebEnv>(c: Context<E>) {
  const deps = c.get("deps");
  return relyingPartyOf(deps.config.baseUrl, identityOf(await currentSettings(deps)).site.name);
}

/** The site's name, as authenticator apps show it beside the account. */
export const issuerOf = async <E extends WebEnv>(c: Context<E>) => identityOf(await currentSettings(c.get("deps"))).site.name;

/** @simplewebauthn/browser, vendored (scripts/vendor-simplewebauthn.ts), and the pages' passkey script. */
export const passkeyAssets = {
  library: assetFile("vendor/simplewebauthn/index.umd.min.js"),
  script: assetFile("passkeys.js"),
};
export const passkeyScripts = [passkeyAssets.library.href, passkeyAssets.script.href];

/** A passkey button and the place its errors are shown; works with passkeys.js. */
export function PasskeyButton({
  options,
  verify,
  mode,
  label,
  nameField,
}: {
  options: string;
  verify: string;
  mode: "register" | "authenticate";
  label: string;
  nameField?: string;
}) {
  return (
    <div class="passkey-action">
      <button
        type="button"
        class="primary"
        data-passkey={mode}
        data-options={options}
        data-verify={verify}
        data-name-field={nameField}
        data-failed={t("security.passkeys.failed", { reason: "{reason}" })}
        hidden
      >
        {label}
      </button>
      <noscript>
        <p class="muted">{t("security.passkeys.noScript")}</p>
      </noscript>
      <p class="field-error" role="alert" data-passkey-error hidden></p>
    </div>
  );
}
