/**
 * Webhook signing secrets at rest. A secret must be read back to sign each delivery, so it cannot be hashed: it is
 * sealed with AES-256-GCM under WEBHOOK_SECRET_KEY (or DATA_DIR/webhook-secret-key, made at first start, mode 600).
 * A database dump alone does not reveal the secrets. Every instance of one site needs the same key; a sealed value
 * names its key (the key's fingerprint), so an instance with another key says so instead of signing garbage.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

export interface SecretBox {
  seal(secret: string): string;
  open(sealed: string): string;
  /** The key's fingerprint (first 8 hex digits of its SHA-256), as written into sealed values. */
  keyId: string;
}

class ForeignKeyError extends Error {}

export function secretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("The webhook secret key must be 32 bytes.");
  const keyId = createHash("sha256").update(key).digest("hex").slice(0, 8);
  return {
    keyId,
    seal(secret) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const body = Buffer.concat([cipher.update(secret, "utf8"), cipher.final(), cipher.getAuthTag()]);
      return `v1:${keyId}:${iv.toString("base64url")}:${body.toString("base64url")}`;
    },
    open(sealed) {
      const [version, id, iv, body] = sealed.split(":");
      if (version !== "v1" || !iv || !body) throw new Error("not a sealed webhook secret");
      if (id !== keyId) {
        throw new ForeignKeyError(`this webhook secret was sealed with key ${id}, this instance has ${keyId}: give every instance the same WEBHOOK_SECRET_KEY`);
      }
      const data = Buffer.from(body, "base64url");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(data.subarray(data.length - 16));
      return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString("utf8");
    },
  };
}

/** WEBHOOK_SECRET_KEY (32 bytes, base64 or hex), or the one in DATA_DIR/webhook-secret-key, made at first start. */
export function resolveWebhookKey(value: string | undefined, dataDir: string): Buffer {
  if (value) return parseKey(value, "WEBHOOK_SECRET_KEY");
  const file = resolve(join(dataDir, "webhook-secret-key"));
  if (existsSync(file)) return parseKey(readFileSync(file, "utf8").trim(), file);
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return key;
}

export function parseKey(text: string, where: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  if (key.length !== 32) throw new Error(`${where}: a webhook secret key is 32 bytes, written as 64 hex digits or in base64 (openssl rand -base64 32).`);
  return key;
}

/** A new signing secret as Standard Webhooks writes them: `whsec_` and 32 random bytes in base64. */
export const newSigningSecret = () => `whsec_${randomBytes(32).toString("base64")}`;
