import { ApiError } from "./api";

// What every page gets, and the small pieces they share.

export interface Ctx {
  account: string;
  scopes: string[];
  can: (scope: string) => boolean;
}

/** The API's message, with each detail's pointer and message: a 400's
 * message alone ("invalid request body") does not say which field. */
export function message(e: unknown): string {
  if (e instanceof ApiError) {
    const details = e.details.filter((d) => d.message).map((d) => (d.pointer ? `${d.pointer}: ${d.message}` : d.message));
    return details.length ? `${e.message}: ${details.join("; ")}` : e.message;
  }
  return e instanceof Error ? e.message : String(e);
}

/** An error, in the API's words. */
export function ErrorText({ error }: { error: string }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}
