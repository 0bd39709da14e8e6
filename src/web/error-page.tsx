/** What a page shows when it cannot be shown: the reason, in the API's words, and a way on. */
import { Layout, Notice } from "./layout.tsx";
import { BASE, type SignedIn } from "./session.ts";

const titles: Record<number, string> = {
  400: "That did not work",
  401: "Sign in first",
  403: "Not allowed",
  404: "Not found",
  408: "Too slow",
  415: "That did not work",
  422: "Check the form",
  429: "Slow down",
  500: "Server error",
};

export function ErrorPage({ status, message, requestId, signedIn }: { status: number; message: string; requestId?: string; signedIn?: SignedIn }) {
  return (
    <Layout title={titles[status] ?? "Error"} signedIn={signedIn}>
      <Notice kind="error">{message}</Notice>
      {requestId && (
        <p class="muted">
          Reference for the administrator: <code>{requestId}</code>
        </p>
      )}
      <p>
        <a href={signedIn ? `${BASE}/dashboard` : `${BASE}/login`}>{signedIn ? "Back to the dashboard" : "Go to the sign-in page"}</a>
      </p>
    </Layout>
  );
}
