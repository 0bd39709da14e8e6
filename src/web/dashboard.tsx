/** The dashboard: the address the profile's `url` gives; the same figures as GET /api/v1/profile. */
import type { Hono } from "hono";
import { getUser } from "../db/repositories/users.ts";
import { toProfile } from "../http/profile-resource.ts";
import { formatBytes, Layout, Notice } from "./components/index.ts";
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
      <Layout title="Dashboard" signedIn={signedIn} active="dashboard">
        {c.req.query("welcome") !== undefined && (
          <Notice kind="success">Your account is ready. Upload an image, or create an API token for your uploader.</Notice>
        )}
        <section class="card profile" aria-label="Profile">
          <Avatar name={profile.name} avatar={user.avatar} />
          <div>
            <p class="name">{profile.name}</p>
            <p class="muted">
              {profile.username} · {profile.email}
            </p>
          </div>
        </section>
        <section class="card" aria-labelledby="storage-title">
          <h2 id="storage-title">Storage</h2>
          <p>
            <strong data-testid="used">{formatBytes(usedBytes)}</strong> used of <strong data-testid="capacity">{formatBytes(capacityBytes)}</strong> (
            {percent < 1 && usedBytes > 0 ? "<1" : Math.round(percent)}%)
          </p>
          <meter
            class="bar"
            aria-label="Used space"
            min={0}
            max={Math.max(capacityBytes, 1)}
            low={capacityBytes * 0.75}
            high={capacityBytes * 0.9}
            optimum={0}
            value={Math.min(usedBytes, Math.max(capacityBytes, 1))}
          >
            {`${formatBytes(usedBytes)} of ${formatBytes(capacityBytes)}`}
          </meter>
          <dl class="stats">
            <div>
              <dt>Images</dt>
              <dd data-testid="image-num">{profile.image_num}</dd>
            </div>
            <div>
              <dt>Albums</dt>
              <dd data-testid="album-num">{profile.album_num}</dd>
            </div>
          </dl>
        </section>
        <section class="card" aria-labelledby="next-title">
          <h2 id="next-title">Get going</h2>
          <ul class="actions">
            <li>
              <a class="button primary" href={`${BASE}/upload`}>
                Upload images
              </a>
            </li>
            <li>
              <a class="button" href={`${BASE}/images`}>
                Your images
              </a>
            </li>
            <li>
              <a class="button" href={`${BASE}/tokens`}>
                Create an API token
              </a>
            </li>
          </ul>
          <p class="muted">
            Uploaders and scripts use the API at <code>{config.baseUrl}/api/v1</code> with a token: see the <a href="/docs">API reference</a>.
          </p>
        </section>
      </Layout>,
    );
  });
}
