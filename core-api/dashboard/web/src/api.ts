// The dashboard's link to the APIs: the session (cookie + CSRF token) with
// core-api's /dashboard routes, and the short-lived bearer token, held in
// memory only, that every public API call carries.

export interface User {
  id: string;
  email: string;
  role: "admin" | "developer" | "viewer";
  merchant_account_ids: string[];
  /** The password was generated: until it is changed, the session may
   * only change it, be read and sign out. */
  must_change_password: boolean;
}

export interface Session {
  csrf_token: string;
  expires_at: string;
  /** When the session ends unless it is used again before. */
  idle_expires_at: string;
  user: User;
}

interface Token {
  access_token: string;
  expires_at: string;
  scopes: string[];
}

/** One problem of a refused request, as the API names it. */
export interface ErrorDetail {
  pointer?: string;
  message?: string;
}

/** An API error: the message and its details are the API's own. */
export class ApiError extends Error {
  constructor(public status: number, message: string, public code = "", public details: ErrorDetail[] = []) {
    super(message);
  }
}

let session: Session | null = null;
let token: Token | null = null;
let tokenPromise: Promise<Token> | null = null;
/** When this page last used the session (a call that counts as a use). */
let lastUse = 0;

/** Told when the server says the session is gone, with why in words. */
let onEnded: (why: string) => void = () => undefined;

export function onSessionEnded(f: (why: string) => void) {
  onEnded = f;
}

/** Why a session that was live is gone, from what the page knew of it. */
function whyEnded(s: Session): string {
  const now = Date.now();
  if (now >= Date.parse(s.expires_at)) return "Your session expired: sessions last 12 hours. Sign in again.";
  if (now >= Date.parse(s.idle_expires_at)) return "Your session ended after a period without use. Sign in again.";
  return "Your session was ended: signed out elsewhere, a password change or a change to your user. Sign in again.";
}

/** Forgets the session the server no longer knows, and says so. */
function ended() {
  const was = session;
  session = null;
  token = null;
  if (was) onEnded(whyEnded(was));
}

/** The vault-proxy public URL, from index.html (secrets go there directly). */
export const vaultProxyURL: string =
  document.querySelector<HTMLMetaElement>('meta[name="payorch-vault-proxy"]')?.content ?? "";

async function parse(resp: Response): Promise<any> {
  const text = await resp.text();
  let body: any = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (!resp.ok) {
    const message = body && typeof body.message === "string" ? body.message : `HTTP ${resp.status}`;
    throw new ApiError(resp.status, message, body?.code ?? "", Array.isArray(body?.details) ? body.details : []);
  }
  return body;
}

async function dashboardCall(method: string, path: string, body?: unknown): Promise<any> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (session && method !== "GET") headers["X-CSRF-Token"] = session.csrf_token;
  const resp = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  // Every session call but the GET of the session itself counts as a use.
  if (!(method === "GET" && path === "/dashboard/session")) lastUse = Date.now();
  try {
    return await parse(resp);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401 && path !== "/dashboard/sign-in") ended();
    throw e;
  }
}

/** Calls a dashboard session route (team management, password). */
export function dashboard(method: string, path: string, body?: unknown): Promise<any> {
  return dashboardCall(method, path, body);
}

/** The session as last read. */
export function currentSession(): Session | null {
  return session;
}

/**
 * Checks the session without using it: ended() runs if it is gone. The
 * page checks when its idle deadline passes, so an open page left alone
 * signs out on its own, and another tab's use keeps it.
 */
export async function checkSession(): Promise<Session | null> {
  try {
    session = await dashboardCall("GET", "/dashboard/session");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
  return session;
}

/**
 * Counts a navigation as a use of the session, at most once a minute
 * (the server records uses to the minute): it renews the bearer token.
 */
export async function touch(): Promise<void> {
  if (!session || Date.now() - lastUse < 60_000) return;
  token = null;
  await bearer();
}

/** Reads the current session, or null when not signed in. */
export async function loadSession(): Promise<Session | null> {
  try {
    session = await dashboardCall("GET", "/dashboard/session");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return (session = null);
    throw e;
  }
  return session;
}

export async function signIn(email: string, password: string): Promise<Session> {
  session = await dashboardCall("POST", "/dashboard/sign-in", { email, password });
  token = null;
  return session!;
}

export async function signOut(): Promise<void> {
  try {
    await dashboardCall("POST", "/dashboard/sign-out");
  } finally {
    session = null;
    token = null;
  }
}

/** The bearer token, renewed a minute before it expires. */
async function bearer(): Promise<Token> {
  if (token && Date.parse(token.expires_at) - Date.now() > 60_000) return token;
  if (!tokenPromise) {
    tokenPromise = dashboardCall("POST", "/dashboard/token")
      .then((t: Token) => (token = t))
      .finally(() => (tokenPromise = null));
  }
  return tokenPromise;
}

/** The scopes of the current token (fetching one if needed). */
export async function scopes(): Promise<string[]> {
  return (await bearer()).scopes;
}

/** Whether granted scopes allow needed (same rules as the services'). */
export function allows(granted: string[], needed: string): boolean {
  const [res, act] = needed.split(".");
  return granted.some((g) => {
    const [gres, gact] = g.split(".");
    if (gres !== "*" && gres !== res) return false;
    return gact === act || (gact === "write" && act === "read");
  });
}

export interface CallOptions {
  account: string;
  /** Call vault-proxy's public listener instead of core-api. */
  vault?: boolean;
  /** Send this Idempotency-Key (one per click). */
  idempotencyKey?: string;
}

/** Calls a public API as the signed-in user, in a merchant account. */
export async function api(method: string, path: string, opts: CallOptions, body?: unknown): Promise<any> {
  const t = await bearer();
  const headers: Record<string, string> = {
    Authorization: `Bearer ${t.access_token}`,
    "x-service-merchant-account-id": opts.account,
  };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (opts.idempotencyKey) headers["Idempotency-Key"] = opts.idempotencyKey;
  const base = opts.vault ? vaultProxyURL : "";
  const resp = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
  });
  return parse(resp);
}

/** A new idempotency key, for one click. */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}
