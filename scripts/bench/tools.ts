/** wrk (the load generator) and nginx (the reference server), installed from Debian's packages when missing. */
import { run, which } from "./util.ts";

export interface Tools {
  wrk: string;
  nginx: string;
  wrkVersion: string;
  nginxVersion: string;
  installed: string[];
}

const find = () => ({
  wrk: which("wrk", ["/usr/bin/wrk"]),
  nginx: which("nginx", ["/usr/sbin/nginx"]),
});

async function aptGet(packages: string[]): Promise<boolean> {
  const asRoot = process.getuid?.() === 0;
  const sudo = asRoot ? [] : Bun.which("sudo") ? ["sudo", "-n"] : null;
  if (!sudo || !Bun.which("apt-get")) return false;
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () => run([...sudo, "apt-get", "install", "-y", "--no-install-recommends", ...packages], { env, timeoutMs: 300_000 });
  let r = await install();
  if (r.code !== 0) {
    // a fresh machine may have no package lists yet
    await run([...sudo, "apt-get", "update"], { env, timeoutMs: 300_000 });
    r = await install();
  }
  if (r.code !== 0) console.error(`apt-get install ${packages.join(" ")} failed:\n${r.stderr.slice(-2000)}`);
  return r.code === 0;
}

export async function ensureTools(): Promise<Tools> {
  let found = find();
  const installed: string[] = [];
  if (!found.wrk || !found.nginx) {
    const want = [...(found.wrk ? [] : ["wrk"]), ...(found.nginx ? [] : ["nginx-light"])];
    console.log(`installing ${want.join(" ")} from Debian's packages (apt-get)…`);
    let ok = await aptGet(want);
    if (!ok && want.includes("nginx-light")) ok = await aptGet(want.map((p) => (p === "nginx-light" ? "nginx" : p))); // nginx-light is gone from newer releases
    found = find();
    installed.push(...want);
  }
  if (!found.wrk || !found.nginx) {
    throw new Error(
      `bench needs wrk and nginx (missing: ${[!found.wrk && "wrk", !found.nginx && "nginx"].filter(Boolean).join(", ")}); ` +
        "install them with: apt-get install -y wrk nginx-light (as root, or with sudo)",
    );
  }
  const w = await run([found.wrk, "--version"]);
  const wrkVersion = `${w.stdout}${w.stderr}`.split("\n")[0]!.replace(/ Copyright.*/, "").trim();
  const nginxVersion = (await run([found.nginx, "-v"])).stderr.trim().replace(/^nginx version: /, "");
  return { wrk: found.wrk, nginx: found.nginx, wrkVersion, nginxVersion, installed };
}
