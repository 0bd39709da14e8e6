/** The mail variables of the environment: SMTP_HOST needs MAIL_FROM, the port follows the security, a bad value names its variable, the password is never echoed. */
import { describe, expect, test } from "bun:test";
import { type Env, parseEnv, smtpFromEnv } from "../../src/env.ts";

const parsed = (vars: Record<string, string>) => {
  const r = parseEnv(vars);
  if ("problems" in r) throw new Error(r.problems.join("\n"));
  return r.env as Env;
};

describe("mail in the environment", () => {
  test("no SMTP_HOST: no SMTP server from the environment (the admin Settings apply)", () => {
    expect(smtpFromEnv(parsed({}))).toBeUndefined();
  });

  test("SMTP_HOST with MAIL_FROM: the server, with the port of its security by default", () => {
    expect(smtpFromEnv(parsed({ SMTP_HOST: "smtp.example.com", MAIL_FROM: "images@example.com" }))).toEqual({
      host: "smtp.example.com",
      port: 587,
      security: "starttls",
      username: "",
      password: "",
      from: "images@example.com",
    });
    expect(smtpFromEnv(parsed({ SMTP_HOST: "smtp.example.com", MAIL_FROM: "a@example.com", SMTP_SECURITY: "tls" }))?.port).toBe(465);
    expect(smtpFromEnv(parsed({ SMTP_HOST: "127.0.0.1", MAIL_FROM: "a@example.com", SMTP_SECURITY: "none" }))?.port).toBe(25);
    expect(smtpFromEnv(parsed({ SMTP_HOST: "mx", MAIL_FROM: "a@example.com", SMTP_PORT: "2525", SMTP_USERNAME: "u", SMTP_PASSWORD: "p w" }))).toMatchObject({
      port: 2525,
      username: "u",
      password: "p w",
    });
  });

  test("bad values name their variable; the password is never shown", () => {
    const r = parseEnv({ SMTP_HOST: "smtp.example.com", SMTP_PORT: "99999", SMTP_SECURITY: "ssl", SMTP_PASSWORD: "x".repeat(600) });
    expect("problems" in r).toBe(true);
    const problems = (r as { problems: string[] }).problems;
    expect(problems.some((p) => p.startsWith("SMTP_PORT:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("SMTP_SECURITY:") && p.includes('"ssl" is not starttls, tls or none'))).toBe(true);
    expect(problems.some((p) => p.startsWith("SMTP_PASSWORD:"))).toBe(true);
    expect(problems.join("\n")).not.toContain("xxxxxxxx");
    const missingFrom = parseEnv({ SMTP_HOST: "smtp.example.com" }) as { problems: string[] };
    expect(missingFrom.problems).toEqual(["MAIL_FROM: must be set with SMTP_HOST (the sender's address)"]);
  });
});
