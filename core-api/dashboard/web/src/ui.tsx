import { ApiError } from "./api";

// What every page gets, and the small pieces they share.

export interface Ctx {
  account: string;
  scopes: string[];
  can: (scope: string) => boolean;
}

export function message(e: unknown): string {
  return e instanceof ApiError || e instanceof Error ? e.message : String(e);
}

/** An error, in the API's words. */
export function ErrorText({ error }: { error: string }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}
