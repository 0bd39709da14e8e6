/**
 * The steps of a sign-in after its first (web/sign-in.ts): the second factor (an authenticator code, a recovery
 * code, a passkey) and the enrolment of one when the site requires it. Each works on the browser's pending sign-in
 * and ends in openSignedInSession, which draws the session's secret then (docs/decisions/sign-in-core.md).
 * Passwordless passkey sign-in starts here too: its ceremony's pending sign-in has no account until the passkey names it.
 */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import type { Context, Hono } from "hono";
import { getUser } from "../../db/repositories/users.ts";
import { AppError, badRequest } from "../../errors.ts";
import { clientIp } from "../../http/auth.ts";
import { selfActor } from "../../services/second-factors/audit.ts";
import { authenticatePasskey, authenticationOptions, registerPasskey, registrationOptions } from "../../services/second-factors/passkeys.ts";
import { redeemRecoveryCode } from "../../services/second-factors/recovery.ts";
import { beginTotpEnrolment, confirmTotpEnrolment, pendingTotpEnrolment, verifyTotp } from "../../services/second-factors/totp.ts";
import { failPendingSignIn, type PendingSignIn, secondFactorsOf, withSecondFactor } from "../../services/sign-in.ts";
import { formField, readForm } from "../form.ts";
import { t } from "../i18n/index.ts";
import { BASE, requireThisSite, type WebEnv } from "../session.ts";
import { abandonPendingSignIn, beginPendingSignIn, completeSignIn, openSignedInSession, pendingSignInOf } from "../sign-in.ts";
import { boxOf, issuerOf, relyingParty, reserveCodeTry } from "./shared.tsx";
import { CODE_MAX, EnrolPage, Expired, PasskeySignInPage, RecoveryShownPage, SecondFactorPage } from "./step-pages.tsx";

/** The browser's WebAuthn answer, sent as the form field `response` (JSON). */
async function webauthnAnswer<T>(c: Context<WebEnv>): Promise<{ answer: T; name: string }> {
  const form = await readForm(c);
  try {
    const answer = JSON.parse(formField(form, "response")) as T;
    if (answer === null || typeof answer !== "object") throw new Error();
    return { answer, name: formField(form, "name") };
  } catch {
    throw badRequest("Send the passkey's answer as JSON in the field `response`.");
  }
}

/** A JSON answer carrying where to go, and the cookies a redirect set. */
function goTo(c: Context<WebEnv>, location: string) {
  return c.json({ location }, 200);
}

export function register(web: Hono<WebEnv>) {
  /** The pending sign-in at `stage`, or null. */
  const pendingAt = async (c: Context<WebEnv>, ...stages: PendingSignIn["stage"][]) => {
    const pending = await pendingSignInOf(c);
    return pending && pending.userId !== null && stages.includes(pending.stage) ? (pending as PendingSignIn & { userId: number }) : null;
  };
  const expired = (c: Context<WebEnv>) => c.html(<Expired />, 401);

  const secondFactorPage = async (c: Context<WebEnv>, pending: PendingSignIn & { userId: number }, error?: string, status: 200 | 401 | 429 = 200) =>
    c.html(<SecondFactorPage factors={await secondFactorsOf(c.get("deps").db, pending.userId)} error={error} />, status);

  web.get("/login/passkey", (c) => c.html(<PasskeySignInPage />));

  web.get("/login/second-factor", async (c) => {
    const pending = await pendingAt(c, "second_factor");
    return pending ? secondFactorPage(c, pending) : expired(c);
  });

  /** A code sent in a pending sign-in: throttled by address and account, five wrong ones end it. */
  const codeStep = (kind: "totp" | "recovery") =>
    web.post(`/login/second-factor/${kind}`, requireThisSite, async (c) => {
      const deps = c.get("deps");
      const pending = await pendingAt(c, "second_factor");
      if (!pending) return expired(c);
      const code = formField(await readForm(c), kind === "totp" ? "code" : "recovery_code").slice(0, CODE_MAX);
      const reserved = reserveCodeTry(c, pending.userId);
      if ("seconds" in reserved) {
        c.header("Retry-After", reserved.seconds);
        return secondFactorPage(c, pending, t("security.step.tooMany", { seconds: reserved.seconds }), 429);
      }
      const now = deps.clock();
      const outcome =
        kind === "totp"
          ? await verifyTotp(deps.db, boxOf(deps), pending.userId, code, now)
          : (await redeemRecoveryCode(deps.db, pending.userId, code, now))
            ? "ok"
            : "wrong";
      if (outcome === "ok") {
        for (const unit of reserved.units) unit.refund();
        if (!(await openSignedInSession(c, { userId: pending.userId, method: withSecondFactor(pending.method, kind), pendingId: pending.id })))
          return expired(c);
        return c.redirect(pending.next || `${BASE}/dashboard`, 303);
      }
      if (await failPendingSignIn(deps.db, pending)) {
        await abandonPendingSignIn(c);
        return expired(c);
      }
      const error = kind === "recovery" ? t("security.step.recoveryWrong") : outcome === "replayed" ? t("security.step.replayed") : t("security.step.wrong");
      return secondFactorPage(c, pending, error, 401);
    });
  codeStep("totp");
  codeStep("recovery");

  // a passkey: the second factor of a pending sign-in, or a passwordless sign-in (a pending sign-in with no account yet)
  web.post("/login/passkey/options", requireThisSite, async (c) => {
    const deps = c.get("deps");
    let pending = await pendingSignInOf(c);
    if (pending?.stage !== "second_factor") {
      pending = await beginPendingSignIn(c, { userId: null, stage: "passkey", method: "", next: formField(await readForm(c), "next") });
    }
    return c.json(await authenticationOptions(deps.db, await relyingParty(c), pending.userId, { pendingId: pending.id }, deps.clock()));
  });

  web.post("/login/passkey/verify", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const pending = await pendingSignInOf(c);
    if (!pending || (pending.stage !== "second_factor" && pending.stage !== "passkey")) throw new AppError("unauthorized", t("security.step.expired"));
    const { answer } = await webauthnAnswer<AuthenticationResponseJSON>(c);
    const passwordless = pending.stage === "passkey";
    // a passwordless ceremony has no account yet: its failures count against the address alone
    const reserved = reserveCodeTry(c, pending.userId);
    if ("seconds" in reserved)
      throw new AppError("too_many_requests", t("security.step.tooMany", { seconds: reserved.seconds }), undefined, { "retry-after": reserved.seconds });
    let proved: Awaited<ReturnType<typeof authenticatePasskey>>;
    try {
      proved = await authenticatePasskey(deps.db, await relyingParty(c), { pendingId: pending.id }, answer, pending.userId, passwordless, deps.clock());
    } catch (e) {
      if (pending.userId !== null && (await failPendingSignIn(deps.db, pending))) await abandonPendingSignIn(c);
      throw e;
    }
    for (const unit of reserved.units) unit.refund();
    if (passwordless) {
      const user = await getUser(deps.db, proved.userId);
      if (!user) throw new AppError("unauthorized", t("security.step.expired"));
      const answered = await completeSignIn(c, user, "passkey", { next: pending.next, multiFactor: proved.userVerified });
      return goTo(c, answered.headers.get("location") ?? `${BASE}/dashboard`);
    }
    if (!(await openSignedInSession(c, { userId: pending.userId!, method: withSecondFactor(pending.method, "passkey"), pendingId: pending.id }))) {
      throw new AppError("unauthorized", t("security.step.expired"));
    }
    return goTo(c, pending.next || `${BASE}/dashboard`);
  });

  // enrolment at sign-in, when the site requires a second factor and the account has none
  const enrolPage = async (c: Context<WebEnv>, pending: PendingSignIn & { userId: number }, error?: string, status: 200 | 401 | 429 = 200) => {
    const deps = c.get("deps");
    const user = await getUser(deps.db, pending.userId);
    if (!user) return expired(c);
    const issuer = await issuerOf(c);
    const enrolment =
      (await pendingTotpEnrolment(deps.db, boxOf(deps), user, issuer)) ?? (await beginTotpEnrolment(deps.db, boxOf(deps), user, issuer, deps.clock()));
    if (!enrolment) return expired(c);
    return c.html(<EnrolPage enrolment={enrolment} error={error} />, status);
  };

  web.get("/login/enrol", async (c) => {
    const pending = await pendingAt(c, "enrol");
    return pending ? enrolPage(c, pending) : expired(c);
  });

  web.post("/login/enrol/totp", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const pending = await pendingAt(c, "enrol");
    if (!pending) return expired(c);
    const user = await getUser(deps.db, pending.userId);
    if (!user) return expired(c);
    const reserved = reserveCodeTry(c, pending.userId);
    if ("seconds" in reserved) {
      c.header("Retry-After", reserved.seconds);
      return enrolPage(c, pending, t("security.step.tooMany", { seconds: reserved.seconds }), 429);
    }
    const code = formField(await readForm(c), "code").slice(0, CODE_MAX);
    const confirmed = await confirmTotpEnrolment(deps.db, boxOf(deps), selfActor(user, clientIp(c)), code, deps.clock());
    if (confirmed.result !== "ok" || !confirmed.recoveryCodes) {
      if (await failPendingSignIn(deps.db, pending)) {
        await abandonPendingSignIn(c);
        return expired(c);
      }
      return enrolPage(c, pending, confirmed.result === "replayed" ? t("security.step.replayed") : t("security.step.wrong"), 401);
    }
    for (const unit of reserved.units) unit.refund();
    if (!(await openSignedInSession(c, { userId: user.id, method: withSecondFactor(pending.method, "totp"), pendingId: pending.id }))) return expired(c);
    return c.html(<RecoveryShownPage codes={confirmed.recoveryCodes} next={pending.next || `${BASE}/dashboard`} />);
  });

  web.post("/login/enrol/passkey/options", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const pending = await pendingAt(c, "enrol");
    const user = pending && (await getUser(deps.db, pending.userId));
    if (!pending || !user) throw new AppError("unauthorized", t("security.step.expired"));
    return c.json(await registrationOptions(deps.db, await relyingParty(c), user, { pendingId: pending.id }, deps.clock()));
  });

  web.post("/login/enrol/passkey/verify", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const pending = await pendingAt(c, "enrol");
    const user = pending && (await getUser(deps.db, pending.userId));
    if (!pending || !user) throw new AppError("unauthorized", t("security.step.expired"));
    const { answer, name } = await webauthnAnswer<RegistrationResponseJSON>(c);
    await registerPasskey(deps.db, await relyingParty(c), selfActor(user, clientIp(c)), { pendingId: pending.id }, answer, name, deps.clock());
    if (!(await openSignedInSession(c, { userId: user.id, method: withSecondFactor(pending.method, "passkey"), pendingId: pending.id }))) {
      throw new AppError("unauthorized", t("security.step.expired"));
    }
    return goTo(c, pending.next || `${BASE}/dashboard`);
  });

  web.post("/login/cancel", requireThisSite, async (c) => {
    await abandonPendingSignIn(c);
    return c.redirect(`${BASE}/login`, 303);
  });
}
