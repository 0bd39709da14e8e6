/** An in-process browser for the user center's route tests: keeps the session cookie and the page's form token. */
import { BASE_URL, type TestContext } from "./harness.ts";

export const formTokenIn = (html: string) => /<input type="hidden" name="_csrf" value="([^"]+)"/.exec(html)?.[1];

/** The Visitor class of a test file: requests go to `context()`'s app, each visitor from `nextAddress()` by default. */
export function visitorClass(context: () => TestContext, nextAddress: () => string, password = "correct horse battery") {
  const PASSWORD = password;

  /** A browser, in-process: keeps the session cookie and the page's form token; sends forms with this site's Origin. */
  class Visitor {
    cookie: string | undefined;
    formToken: string | undefined;
    lastSetCookie: string | null = null;
    constructor(readonly address = nextAddress()) {}

    private headers(extra: Record<string, string> = {}) {
      return { accept: "text/html", "x-forwarded-for": this.address, ...(this.cookie ? { cookie: this.cookie } : {}), ...extra };
    }

    private keep(res: Response) {
      const set = res.headers.get("set-cookie");
      this.lastSetCookie = set;
      if (!set) return;
      // the session's cookie when the answer sets several (a sign-in also clears its own pending cookie)
      const all = res.headers.getSetCookie();
      const chosen = all.find((c) => c.startsWith("ih_session=")) ?? all[0] ?? set;
      const [pair] = chosen.split(";");
      const value = pair!.slice(pair!.indexOf("=") + 1);
      this.cookie = value && !/Max-Age=0/i.test(chosen) ? pair : undefined;
    }

    async get(path: string) {
      const res = await context().request(path, { headers: this.headers(), redirect: "manual" });
      this.keep(res);
      const html = res.headers.get("content-type")?.includes("text/html") ? await res.clone().text() : "";
      this.formToken = formTokenIn(html) ?? this.formToken;
      return res;
    }

    /** A form post; `origin` null sends none, `formToken` null leaves the field out. */
    async post(
      path: string,
      fields: Record<string, string> = {},
      options: { origin?: string | null; formToken?: string | null; headers?: Record<string, string> } = {},
    ) {
      const { origin = BASE_URL, formToken = this.formToken, headers = {} } = options;
      const body = new URLSearchParams({ ...(formToken ? { _csrf: formToken } : {}), ...fields });
      const res = await context().request(path, {
        method: "POST",
        headers: this.headers({ "content-type": "application/x-www-form-urlencoded", ...(origin ? { origin } : {}), ...headers }),
        body: body.toString(),
        redirect: "manual",
      });
      this.keep(res);
      return res;
    }

    async signIn(login: string, password = PASSWORD) {
      const res = await this.post("/user/login", { login, password }, { formToken: null });
      if (res.status === 303 && this.cookie) await this.get("/user/dashboard"); // reads the form token
      return res;
    }
  }
  return Visitor;
}
