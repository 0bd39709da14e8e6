/** What a page shows when it cannot be shown: the reason, in the API's words, and the way back to where the user was. */
import { Layout, Notice } from "./components/index.ts";
import { type MessageKey, rich, t } from "./i18n/index.ts";
import { BASE, type SignedIn } from "./session.ts";

const TITLED = [400, 401, 403, 404, 408, 415, 422, 429, 500];

export function ErrorPage({
  status,
  message,
  requestId,
  signedIn,
  back,
}: {
  status: number;
  message: string;
  requestId?: string;
  signedIn?: SignedIn;
  back?: string;
}) {
  const title = t(`common.error.title.${TITLED.includes(status) ? status : "other"}` as MessageKey);
  return (
    <Layout title={title} signedIn={signedIn}>
      <Notice kind="error">{message}</Notice>
      {requestId && <p class="muted">{rich("common.error.reference", { code: (chunks) => <code>{chunks}</code>, id: requestId })}</p>}
      <p>
        {back ? (
          <a class="button" href={back}>
            ← {t("common.error.back")}
          </a>
        ) : (
          <a href={signedIn ? `${BASE}/dashboard` : `${BASE}/login`}>{signedIn ? t("common.error.dashboard") : t("common.error.signIn")}</a>
        )}
      </p>
    </Layout>
  );
}
