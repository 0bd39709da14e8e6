/**
 * The page of a one-time password link: an administrator makes the link (admin page or
 * POST /api/admin/users/{id}/password-link); its user sets a password here, once, within the hour. Before sign-in:
 * the link's secret is the credential, and the form must come from this site.
 */
import type { Hono } from "hono";
import { notFound } from "../errors.ts";
import { PASSWORD_MAX, PASSWORD_MIN } from "../services/passwords.ts";
import { findPasswordLink, usePasswordLink } from "../services/password-links.ts";
import { formField, readForm } from "./form.ts";
import { Field, FieldError, Layout, Notice } from "./components/index.ts";
import { BASE, requireThisSite, type WebEnv } from "./session.ts";

const gone = () =>
  notFound("This link is not valid: it was used already, it has expired (links last an hour), or it never existed. Ask your administrator for a new one.");

function PasswordPage({ token, username, error }: { token: string; username: string; error?: string }) {
  return (
    <Layout title="Set your password">
      <form class="card narrow" method="post" action={`${BASE}/password/${token}`} novalidate>
        <p>
          Set the password of <strong>{username}</strong>. This link works once; your other sessions end.
        </p>
        <Field label="New password" id="password" hint={`At least ${PASSWORD_MIN} characters`}>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="new-password"
            required
            minlength={PASSWORD_MIN}
            maxlength={PASSWORD_MAX}
            aria-invalid={error ? "true" : undefined}
            aria-describedby={`password-hint${error ? " password-error" : ""}`}
          />
          <FieldError id="password" error={error} />
        </Field>
        <Field label="New password, again" id="again">
          <input id="again" name="again" type="password" autocomplete="new-password" required maxlength={PASSWORD_MAX} />
        </Field>
        <button type="submit" class="primary">
          Set password
        </button>
      </form>
    </Layout>
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/password/:token", async (c) => {
    const token = c.req.param("token");
    const link = await findPasswordLink(c.get("deps"), token);
    if (!link) throw gone();
    c.header("Referrer-Policy", "no-referrer");
    return c.html(<PasswordPage token={token} username={link.username} />);
  });

  web.post("/password/:token", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const token = c.req.param("token");
    const link = await findPasswordLink(deps, token);
    if (!link) throw gone();
    const form = await readForm(c);
    const password = formField(form, "password");
    const problem =
      password.length < PASSWORD_MIN
        ? `Use at least ${PASSWORD_MIN} characters.`
        : password.length > PASSWORD_MAX
          ? `Use at most ${PASSWORD_MAX} characters.`
          : password !== formField(form, "again")
            ? "The two passwords differ."
            : null;
    if (problem) return c.html(<PasswordPage token={token} username={link.username} error={problem} />, 422);
    if (!(await usePasswordLink(deps, token, password))) throw gone();
    return c.html(
      <Layout title="Password set">
        <Notice kind="success">Your password is set.</Notice>
        <p class="narrow">
          <a href={`${BASE}/login`}>Sign in</a> with it.
        </p>
      </Layout>,
    );
  });
}
