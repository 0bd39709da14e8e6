/** TOTP arithmetic (RFC 6238) and recovery codes, without a database. */
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { cleanCode, codeAt, matchingStep, openTotpSecret, sealTotpSecret } from "../../src/services/second-factors/totp.ts";
import { normaliseRecoveryCode } from "../../src/services/second-factors/recovery.ts";
import { secondFactorDue, withSecondFactor } from "../../src/services/sign-in.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";

// RFC 6238, appendix B: the SHA-1 seed "12345678901234567890" in base32, and its 8-digit codes' last 6 digits
const RFC_SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
const RFC_VECTORS: [seconds: number, code: string][] = [
  [59, "287082"],
  [1111111109, "081804"],
  [1111111111, "050471"],
  [1234567890, "005924"],
  [2000000000, "279037"],
];

describe("TOTP codes", () => {
  test("match the RFC 6238 test vectors", () => {
    for (const [seconds, code] of RFC_VECTORS) expect(codeAt(RFC_SECRET, new Date(seconds * 1000))).toBe(code);
  });

  test("a code matches its own step, and one step either side, never two", () => {
    const at = new Date(1_700_000_000_000);
    const step = Math.floor(at.getTime() / 30_000);
    const code = codeAt(RFC_SECRET, at);
    expect(matchingStep(RFC_SECRET, code, at)).toBe(step);
    expect(matchingStep(RFC_SECRET, code, new Date(at.getTime() + 30_000))).toBe(step);
    expect(matchingStep(RFC_SECRET, code, new Date(at.getTime() - 30_000))).toBe(step);
    expect(matchingStep(RFC_SECRET, code, new Date(at.getTime() + 60_000))).toBeNull();
    expect(matchingStep(RFC_SECRET, code, new Date(at.getTime() - 60_000))).toBeNull();
  });

  test("spaces and dashes are ignored; anything but six digits is no code", () => {
    expect(cleanCode(" 123 456 ")).toBe("123456");
    expect(cleanCode("123-456")).toBe("123456");
    expect(cleanCode("12345")).toBeNull();
    expect(cleanCode("1234567")).toBeNull();
    expect(cleanCode("12345a")).toBeNull();
    expect(matchingStep(RFC_SECRET, "abcdef", new Date())).toBeNull();
  });

  test("a sealed secret opens with its key only, and a sealed webhook secret is not a TOTP secret", () => {
    const box = secretBox(randomBytes(32));
    const sealed = sealTotpSecret(box, RFC_SECRET);
    expect(sealed).not.toContain(RFC_SECRET);
    expect(openTotpSecret(box, sealed)).toBe(RFC_SECRET);
    expect(() => openTotpSecret(secretBox(randomBytes(32)), sealed)).toThrow();
    expect(() => openTotpSecret(box, box.seal("whsec_abc"))).toThrow("not a sealed TOTP secret");
  });
});

describe("recovery codes and the sign-in rules", () => {
  test("recovery codes are read without case, spaces or dashes", () => {
    expect(normaliseRecoveryCode(" ABCDE-fghjk ")).toBe("abcdefghjk");
  });

  test("a second factor is due when the account has one; enrolment when the site requires one and it has none", () => {
    const none = { totp: false, passkeys: 0 };
    expect(secondFactorDue("off", { role: "user" }, none, false)).toBe("complete");
    expect(secondFactorDue("off", { role: "user" }, { totp: true, passkeys: 0 }, false)).toBe("second_factor");
    expect(secondFactorDue("off", { role: "user" }, { totp: false, passkeys: 2 }, false)).toBe("second_factor");
    expect(secondFactorDue("admins", { role: "user" }, none, false)).toBe("complete");
    expect(secondFactorDue("admins", { role: "admin" }, none, false)).toBe("enrol");
    expect(secondFactorDue("everyone", { role: "user" }, none, false)).toBe("enrol");
    // a passkey that verified its user is two factors: nothing more is asked
    expect(secondFactorDue("everyone", { role: "admin" }, { totp: true, passkeys: 1 }, true)).toBe("complete");
    expect(withSecondFactor("password", "totp")).toBe("password+totp");
    expect(withSecondFactor("oidc:corp", "passkey")).toBe("oidc:corp+passkey");
  });
});
