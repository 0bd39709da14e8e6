/**
 * Sends the site's mail. A mail the visitor's answer must not wait for (a password reset, a verification link) is
 * queued: it runs after the answer, so the answer takes the same time whether a mail goes out or not, and a slow or
 * failing SMTP server shows in the log, not in the page. The test mail of the admin Settings is sent at once and its
 * error shown. Mail is rare (each kind is throttled): one connection per mail, no pool.
 */
import nodemailer from "nodemailer";
import type { Deps } from "../../deps.ts";
import { logFor } from "../../observability/log.ts";
import type { SmtpConfig } from "./config.ts";

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The display name of the sender: the site's name. */
  fromName: string;
}

/** Seconds the server has to answer at each step before the send fails. */
const TIMEOUT_MS = 15_000;

export function transportOf(smtp: SmtpConfig) {
  return nodemailer.createTransport({
    host: smtp.host,
    port: smtp.port,
    secure: smtp.security === "tls",
    requireTLS: smtp.security === "starttls",
    ignoreTLS: smtp.security === "none",
    auth: smtp.username ? { user: smtp.username, pass: smtp.password } : undefined,
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
  });
}

/** Sends one mail now; rejects with the server's or the network's error. */
export async function sendMail(smtp: SmtpConfig, mail: Mail): Promise<void> {
  const transport = transportOf(smtp);
  try {
    await transport.sendMail({
      from: { name: mail.fromName, address: smtp.from },
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
    });
  } finally {
    transport.close();
  }
}

/** Work that ends in a mail, run after the answer; `settle()` waits for what is under way (tests, shutdown). */
export class MailOutbox {
  private readonly running = new Set<Promise<void>>();
  constructor(private readonly deps: Deps) {}

  /** Runs `task` in the background; its failure is logged under `what`, never thrown to the request. */
  queue(what: string, task: () => Promise<void>): void {
    const run = (async () => {
      try {
        await task();
      } catch (err) {
        logFor(this.deps).error({ err }, `mail: ${what} failed`);
      }
    })();
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
  }

  /** Resolves when every queued task has ended. */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }
}
