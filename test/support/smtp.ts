/**
 * A local SMTP server for the mail tests (the `smtp-server` package, from nodemailer's authors), on loopback: it
 * accepts every mail, parses it with `mailparser` and keeps it. No TLS (the site's `none` security), an optional
 * login.
 */
import { simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import type { SmtpConfig } from "../../src/services/mail/config.ts";

export interface CapturedMail {
  to: string;
  from: string;
  fromName: string;
  subject: string;
  text: string;
  html: string;
  /** The links in the text part. */
  links: string[];
}

export interface LocalSmtp {
  port: number;
  mails: CapturedMail[];
  /** The site's SMTP settings that reach this server. */
  config: SmtpConfig;
  /** Mails sent to this address so far. */
  to(address: string): CapturedMail[];
  /** Waits (bounded) until `n` mails have arrived in all. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  /** Makes the server refuse every mail from now on (or accept again). */
  refuse(on: boolean): void;
  stop(): Promise<void>;
}

export async function startLocalSmtp(auth?: { username: string; password: string }): Promise<LocalSmtp> {
  const mails: CapturedMail[] = [];
  let refusing = false;
  const server = new SMTPServer({
    secure: false,
    disabledCommands: auth ? ["STARTTLS"] : ["STARTTLS", "AUTH"],
    authOptional: !auth,
    allowInsecureAuth: true,
    logger: false,
    onAuth(a, _session, callback) {
      if (auth && a.username === auth.username && a.password === auth.password) return callback(null, { user: a.username });
      return callback(new Error("Invalid username or password"));
    },
    onData(stream, _session, callback) {
      if (refusing) {
        stream.resume();
        stream.on("end", () => callback(Object.assign(new Error("Mailbox unavailable"), { responseCode: 550 })));
        return;
      }
      simpleParser(stream)
        .then((parsed) => {
          const from = parsed.from?.value[0];
          const to = Array.isArray(parsed.to) ? parsed.to[0] : parsed.to;
          const text = parsed.text ?? "";
          mails.push({
            to: to?.value[0]?.address ?? "",
            from: from?.address ?? "",
            fromName: from?.name ?? "",
            subject: parsed.subject ?? "",
            text,
            html: typeof parsed.html === "string" ? parsed.html : "",
            links: [...text.matchAll(/https?:\/\/\S+/g)].map((m) => m[0]),
          });
          callback();
        })
        .catch(callback);
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.server.address() as { port: number }).port));
  });
  return {
    port,
    mails,
    config: { host: "127.0.0.1", port, security: "none", username: auth?.username ?? "", password: auth?.password ?? "", from: "images@example.test" },
    to: (address) => mails.filter((m) => m.to.toLowerCase() === address.toLowerCase()),
    async waitFor(n, timeoutMs = 5000) {
      const end = Date.now() + timeoutMs;
      while (mails.length < n) {
        if (Date.now() > end) throw new Error(`waited ${timeoutMs} ms for ${n} mails, got ${mails.length}`);
        await Bun.sleep(20);
      }
    },
    refuse(on) {
      refusing = on;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
