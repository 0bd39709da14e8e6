/** The dashboard: the address the profile's `url` gives; the same figures as GET /api/v1/profile. */
import type { Hono } from "hono";
import { getUser } from "../db/repositories/users.ts";
import { toProfile } from "../http/profile-resource.ts";
import { formatBytes, Layout, Notice } from "./components/index.ts";
import { num, rich, t } from "./i18n/index.ts";
import { BASE, requireSession, type WebEnv } from "./session.ts";

/** The avatar the account set, or its initial: the default Gravatar address would tell a third party who visits, and fails on a closed network. */
function Avatar({ name, avatar }: { name: string; avatar: string | null }) {
  if (avatar) return <img class="avatar" src={avatar} alt="" width={64} height={64} />;
  return (
    <span class="avatar initial" aria-hidden="true">
      {[...name.trim()][0]?.toUpperCase() ?? "?"}
    </span>
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/dashboard", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const { db, config } = c.get("deps");
    const user = (await getUser(db, signedIn.user.id)) ?? signedIn.user;
    const profile = toProfile(user, signedIn.group, config.baseUrl);
    const capacityBytes = profile.capacity * 1024;
    const usedBytes = profile.size * 1024;
    const percent = capacityBytes > 0 ? Math.min(100, (usedBytes / capacityBytes) * 100) : 100;
    return c.html(
      <Layout title={t("dashboard.title")} signedIn={signedIn} active="dashboard">
        {c.req.query("welcome") !== undefined && <Notice kind="success">{t("dashboard.welcome")}</Notice>}
        <section class="card profile" aria-label={t("dashboard.profile")}>
          <Avatar name={profile.name} avatar={user.avatar} />
          <div>
            <p class="name">{profile.name}</p>
            <p class="muted">
              {profile.username} · {profile.email}
            </p>
          </div>
        </section>
        <section class="card" aria-labelledby="storage-title">
          <h2 id="storage-title">{t("dashboard.storage")}</h2>
          <p>
            {rich("dashboard.used", {
              used: <strong data-testid="used">{formatBytes(usedBytes)}</strong>,
              capacity: <strong data-testid="capacity">{formatBytes(capacityBytes)}</strong>,
              percent: percent < 1 && usedBytes > 0 ? "<1" : num(Math.round(percent)),
            })}
          </p>
          <meter
            class="bar"
            aria-label={t("dashboard.usedSpace")}
            min={0}
            max={Math.max(capacityBytes, 1)}
            low={capacityBytes * 0.75}
            high={capacityBytes * 0.9}
            optimum={0}
            value={Math.min(usedBytes, Math.max(capacityBytes, 1))}
          >
            {t("dashboard.usedOf", { used: formatBytes(usedBytes), capacity: formatBytes(capacityBytes) })}
          </meter>
          <dl class="stats">
            <div>
              <dt>{t("dashboard.images")}</dt>
              <dd data-testid="image-num">{num(profile.image_num)}</dd>
            </div>
            <div>
              <dt>{t("dashboard.albums")}</dt>
              <dd data-testid="album-num">{num(profile.album_num)}</dd>
            </div>
          </dl>
        </section>
        <section class="card" aria-labelledby="next-title">
          <h2 id="next-title">{t("dashboard.next")}</h2>
          <ul class="actions">
            <li>
              <a class="button primary" href={`${BASE}/upload`}>
                {t("dashboard.upload")}
              </a>
            </li>
            <li>
              <a class="button" href={`${BASE}/images`}>
                {t("dashboard.yourImages")}
              </a>
            </li>
            <li>
              <a class="button" href={`${BASE}/tokens`}>
                {t("dashboard.createToken")}
              </a>
            </li>
          </ul>
          <p class="muted">{rich("dashboard.api", { api: <code>{config.baseUrl}/api/v1</code>, docs: (chunks) => <a href="/docs">{chunks}</a> })}</p>
        </section>
      </Layout>,
    );
  });
}
