import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  Session, allows, api, checkSession, loadSession, newIdempotencyKey, onSessionEnded, scopes, signIn, signOut, touch,
} from "./api";
import { PaymentServices } from "./paymentservices";
import { WebhookSubscriptions } from "./settings";
import { ChangePassword, Team } from "./team";
import { ThreeDSScenarios } from "./threeds";
import { ForwardConfig, ForwardConfigs } from "./vaultforward";
import { Ctx, ErrorText, message } from "./ui";

// ---- routing: #/path, so core-api serves one page ----

function useRoute(): string {
  const [route, setRoute] = useState(location.hash.slice(1) || "/transactions");
  useEffect(() => {
    const on = () => setRoute(location.hash.slice(1) || "/transactions");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

// ---- sign-in ----

function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Session) => void; notice: string }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  async function submit(ev: Event) {
    ev.preventDefault();
    setBusy(true);
    setError("");
    try {
      onSignedIn(await signIn(email, password));
    } catch (e) {
      setError(message(e));
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="signin">
      <h1>payorch dashboard</h1>
      {notice && <p class="notice" role="status" data-testid="signin-notice">{notice}</p>}
      <form onSubmit={submit} aria-label="Sign in">
        <label for="email">Email</label>
        <input id="email" type="email" autocomplete="username" required value={email}
          onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        <label for="password">Password</label>
        <input id="password" type="password" autocomplete="current-password" required value={password}
          onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        <button type="submit" disabled={busy}>Sign in</button>
        <ErrorText error={error} />
      </form>
    </main>
  );
}

// ---- paging over the API's cursors ----

interface Page<T> {
  items: T[];
  next_cursor: string | null;
  previous_cursor: string | null;
}

function usePage<T>(ctx: Ctx, path: string, query: Record<string, string>) {
  const [cursor, setCursor] = useState("");
  const [page, setPage] = useState<Page<T> | null>(null);
  const [error, setError] = useState("");
  const q = new URLSearchParams({ limit: "20" });
  for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
  if (cursor) q.set("cursor", cursor);
  const url = `${path}?${q}`;
  useEffect(() => {
    let live = true;
    setError("");
    api("GET", url, { account: ctx.account })
      .then((p) => live && setPage(p))
      .catch((e) => live && (setPage(null), setError(message(e))));
    return () => {
      live = false;
    };
  }, [url, ctx.account]);
  useEffect(() => setCursor(""), [ctx.account, JSON.stringify(query)]);
  return { page, error, setCursor };
}

function Pager({ page, setCursor }: { page: Page<unknown> | null; setCursor: (c: string) => void }) {
  if (!page) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={!page.previous_cursor} onClick={() => setCursor(page.previous_cursor!)}>
        Previous page
      </button>
      <button type="button" disabled={!page.next_cursor} onClick={() => setCursor(page.next_cursor!)}>
        Next page
      </button>
    </nav>
  );
}

function money(amount: number | null | undefined, currency: string): string {
  if (amount == null) return "";
  return `${(amount / 100).toFixed(2)} ${currency}`;
}

function when(t: string | null | undefined): string {
  return t ? new Date(t).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "";
}

/** Scalar fields of an object as a definition list. */
function Facts({ data, label }: { data: Record<string, unknown> | null | undefined; label: string }) {
  if (!data) return <p>None.</p>;
  const rows: [string, string][] = [];
  const walk = (prefix: string, v: unknown) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    } else if (v !== null && v !== undefined && v !== "") {
      rows.push([prefix, Array.isArray(v) ? v.join(", ") : String(v)]);
    }
  };
  walk("", data);
  return (
    <dl class="facts" aria-label={label}>
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

// ---- transactions ----

const statuses = [
  "processing", "buyer_approval_pending", "authorization_succeeded", "authorization_declined", "authorization_failed",
  "authorization_void_pending", "authorization_voided", "capture_pending", "capture_succeeded",
];

function Transactions({ ctx }: { ctx: Ctx }) {
  const [status, setStatus] = useState("");
  const [buyer, setBuyer] = useState("");
  const { page, error, setCursor } = usePage<any>(ctx, "/transactions", { status, buyer_id: buyer });
  return (
    <section aria-labelledby="tx-title">
      <h1 id="tx-title">Transactions</h1>
      <form class="filters" aria-label="Filter transactions" onSubmit={(e) => e.preventDefault()}>
        <label for="status">Status</label>
        <select id="status" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
          <option value="">Any</option>
          {statuses.map((s) => (
            <option key={s} value={s}>{s}</option>
          ))}
        </select>
        <label for="buyer">Buyer id</label>
        <input id="buyer" value={buyer} onChange={(e) => setBuyer((e.target as HTMLInputElement).value.trim())} />
      </form>
      <ErrorText error={error} />
      {page && (
        <table>
          <caption>Newest first</caption>
          <thead>
            <tr><th scope="col">Created</th><th scope="col">Status</th><th scope="col">Amount</th><th scope="col">Method</th></tr>
          </thead>
          <tbody>
            {page.items.map((t) => (
              <tr key={t.id}>
                <td><a href={`#/transactions/${t.id}`}>{when(t.created_at)}</a></td>
                <td>{t.status}</td>
                <td>{money(t.amount, t.currency)}</td>
                <td>{t.payment_method?.label ?? t.payment_method?.method ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {page && page.items.length === 0 && <p>No transactions.</p>}
      <Pager page={page} setCursor={setCursor} />
    </section>
  );
}

function Transaction({ ctx, id }: { ctx: Ctx; id: string }) {
  const [tx, setTx] = useState<any>(null);
  const [events, setEvents] = useState<any[]>([]);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const [amount, setAmount] = useState("");
  const [busy, setBusy] = useState(false);
  const reload = async () => {
    try {
      const [t, ev] = await Promise.all([
        api("GET", `/transactions/${id}`, { account: ctx.account }),
        api("GET", `/transactions/${id}/events?limit=100`, { account: ctx.account }),
      ]);
      setTx(t);
      setEvents(ev.items);
    } catch (e) {
      setError(message(e));
    }
  };
  useEffect(() => {
    reload();
  }, [id, ctx.account]);

  async function act(label: string, path: string, body?: unknown) {
    setBusy(true);
    setError("");
    setNote("");
    try {
      // One idempotency key per click: a retry of this click is safe,
      // a second click is a second request.
      await api("POST", `/transactions/${id}/${path}`, { account: ctx.account, idempotencyKey: newIdempotencyKey() }, body);
      setNote(`${label} requested.`);
      await reload();
    } catch (e) {
      setError(message(e));
    } finally {
      setBusy(false);
    }
  }
  const amt = amount ? { amount: Math.round(Number(amount) * 100) } : {};
  if (!tx) return <section><h1>Transaction</h1><ErrorText error={error} /></section>;
  const write = ctx.can("transactions.write");
  return (
    <section aria-labelledby="txd-title">
      <p><a href="#/transactions">All transactions</a></p>
      <h1 id="txd-title">Transaction {money(tx.amount, tx.currency)}</h1>
      <p>Status: <strong data-testid="tx-status">{tx.status}</strong></p>
      <h2>Amounts</h2>
      <Facts label="Amounts" data={{
        amount: money(tx.amount, tx.currency), authorized: money(tx.authorized_amount, tx.currency),
        captured: money(tx.captured_amount, tx.currency), refunded: money(tx.refunded_amount, tx.currency),
        capture_pending: money(tx.capture_pending_amount, tx.currency), refund_pending: money(tx.refund_pending_amount, tx.currency),
      }} />
      <h2>Details</h2>
      <Facts label="Details" data={{ id: tx.id, intent: tx.intent, payment_method: tx.payment_method, buyer_id: tx.buyer_id,
        payment_service_id: tx.payment_service_id, raw_response_code: tx.raw_response_code,
        raw_response_description: tx.raw_response_description, created_at: tx.created_at }} />
      <h2>3-D Secure</h2>
      <Facts label="3-D Secure" data={tx.three_d_secure} />
      <h2>Anti-fraud</h2>
      <Facts label="Anti-fraud" data={tx.anti_fraud_decision} />
      {write && (
        <div class="actions" role="group" aria-label="Actions">
          <label for="amount">Amount (blank: all that is left)</label>
          <input id="amount" inputMode="decimal" value={amount} onInput={(e) => setAmount((e.target as HTMLInputElement).value)} />
          <button type="button" disabled={busy} onClick={() => act("Capture", "capture", amt)}>Capture</button>
          <button type="button" disabled={busy} onClick={() => act("Void", "void", {})}>Void</button>
          <button type="button" disabled={busy} onClick={() => act("Refund", "refunds", amt)}>Refund</button>
        </div>
      )}
      <p role="status">{note}</p>
      <ErrorText error={error} />
      <h2>Events</h2>
      <ol class="timeline" aria-label="Events">
        {events.map((e) => (
          <li key={e.id}>
            <strong>{e.name}</strong> {when(e.created_at)}{" "}
            {e.status_before && <span>{e.status_before} → {e.status_after}</span>}{" "}
            {e.amount != null && money(e.amount, tx.currency)}
            {e.raw_response_code && <span> ({e.raw_response_code} {e.raw_response_description})</span>}
            {e.notification && (
              <details>
                <summary>Processor notification</summary>
                <pre>{typeof e.notification === "string" ? e.notification : JSON.stringify(e.notification, null, 2)}</pre>
              </details>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}

// ---- buyers ----

function Buyers({ ctx }: { ctx: Ctx }) {
  const [search, setSearch] = useState("");
  const { page, error, setCursor } = usePage<any>(ctx, "/buyers", { search });
  return (
    <section aria-labelledby="buyers-title">
      <h1 id="buyers-title">Buyers</h1>
      <form class="filters" aria-label="Search buyers" onSubmit={(e) => e.preventDefault()}>
        <label for="search">Search</label>
        <input id="search" value={search} onChange={(e) => setSearch((e.target as HTMLInputElement).value.trim())} />
      </form>
      <ErrorText error={error} />
      {page && (
        <table>
          <thead>
            <tr><th scope="col">Name</th><th scope="col">External identifier</th><th scope="col">Created</th></tr>
          </thead>
          <tbody>
            {page.items.map((b) => (
              <tr key={b.id}>
                <td><a href={`#/buyers/${b.id}`}>{b.display_name || b.id}</a></td>
                <td>{b.external_identifier ?? ""}</td>
                <td>{when(b.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {page && page.items.length === 0 && <p>No buyers.</p>}
      <Pager page={page} setCursor={setCursor} />
    </section>
  );
}

function Buyer({ ctx, id }: { ctx: Ctx; id: string }) {
  const [buyer, setBuyer] = useState<any>(null);
  const [methods, setMethods] = useState<any[]>([]);
  const [error, setError] = useState("");
  useEffect(() => {
    (async () => {
      try {
        setBuyer(await api("GET", `/buyers/${id}`, { account: ctx.account }));
        const pm = await api("GET", `/buyers/payment-methods?buyer_id=${encodeURIComponent(id)}`, { account: ctx.account });
        setMethods(pm.items ?? []);
      } catch (e) {
        setError(message(e));
      }
    })();
  }, [id, ctx.account]);
  return (
    <section aria-labelledby="buyer-title">
      <p><a href="#/buyers">All buyers</a></p>
      <h1 id="buyer-title">Buyer {buyer?.display_name ?? ""}</h1>
      <ErrorText error={error} />
      {buyer && <Facts label="Buyer" data={{ id: buyer.id, external_identifier: buyer.external_identifier, created_at: buyer.created_at }} />}
      <h2>Payment methods</h2>
      {methods.length === 0 ? <p>None.</p> : (
        <table>
          <thead>
            <tr><th scope="col">Method</th><th scope="col">Scheme</th><th scope="col">Card</th><th scope="col">Expires</th></tr>
          </thead>
          <tbody>
            {methods.map((m) => (
              <tr key={m.id}>
                <td>{m.method}</td><td>{m.scheme ?? ""}</td><td>{m.label ?? ""}</td><td>{m.expiration_date ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

// ---- the shell ----

function useAccounts(session: Session): string[] {
  const ids = session.user.merchant_account_ids;
  const [accounts, setAccounts] = useState<string[]>(ids[0] === "*" ? ["default"] : ids);
  useEffect(() => {
    if (ids[0] !== "*") return;
    api("GET", "/merchant-accounts?limit=100", { account: "default" })
      .then((p) => setAccounts(p.items.map((a: any) => a.id)))
      .catch(() => undefined);
  }, [session]);
  return accounts;
}

/** The sandbox 3-D Secure simulator exists outside production only. */
const sandbox = document.querySelector<HTMLMetaElement>('meta[name="payorch-environment"]')?.content !== "production";

function Shell({ session, onSignedOut }: { session: Session; onSignedOut: () => void }) {
  const route = useRoute();
  const accounts = useAccounts(session);
  const [account, setAccount] = useState(accounts[0]);
  const [granted, setGranted] = useState<string[] | null>(null);
  useEffect(() => {
    if (!accounts.includes(account)) setAccount(accounts[0]);
  }, [accounts]);
  useEffect(() => {
    scopes().then(setGranted).catch(() => setGranted([]));
  }, [session]);
  // Moving between pages is a use of the session.
  useEffect(() => {
    touch().catch(() => undefined);
  }, [route]);
  // When the session's deadline passes, check it (without using it):
  // gone, the page returns to sign-in; kept alive by another tab, wait
  // for its new deadline.
  // A deadline already past (the browser's clock ahead of core-api's, or
  // a failed check) is checked again in 30 s, not in a loop.
  const [deadline, setDeadline] = useState({ at: session.idle_expires_at, again: 1000 });
  useEffect(() => {
    const at = Math.min(Date.parse(deadline.at), Date.parse(session.expires_at));
    const timer = setTimeout(() => {
      checkSession()
        .then((s) => s && setDeadline({ at: s.idle_expires_at, again: 30_000 }))
        .catch(() => setDeadline({ at: deadline.at, again: 30_000 }));
    }, Math.max(deadline.again, at - Date.now() + 1000));
    return () => clearTimeout(timer);
  }, [deadline]);
  if (!granted) return <p role="status">Loading…</p>;
  const ctx: Ctx = { account, scopes: granted, can: (s) => allows(granted, s) };
  const parts = route.split("/").filter(Boolean);
  let page;
  switch (parts[0]) {
    case "buyers":
      page = parts[1] ? <Buyer ctx={ctx} id={parts[1]} /> : <Buyers ctx={ctx} />;
      break;
    case "vault-forward":
      page = parts[1] ? <ForwardConfig ctx={ctx} id={parts[1]} /> : <ForwardConfigs ctx={ctx} />;
      break;
    case "payment-services":
      page = <PaymentServices ctx={ctx} />;
      break;
    case "webhooks":
      page = <WebhookSubscriptions ctx={ctx} />;
      break;
    case "team":
      page = session.user.role === "admin" ? <Team session={session} accounts={accounts} /> : <p>Only admins manage the team.</p>;
      break;
    case "password":
      page = <ChangePassword />;
      break;
    case "three-ds-scenarios":
      page = sandbox ? <ThreeDSScenarios ctx={ctx} /> : <p>3-D Secure scenarios exist only outside production.</p>;
      break;
    default:
      page = parts[1] ? <Transaction ctx={ctx} id={parts[1]} /> : <Transactions ctx={ctx} />;
  }
  const link = (href: string, label: string) => (
    <a href={href} aria-current={("#" + route).startsWith(href) ? "page" : undefined}>{label}</a>
  );
  return (
    <div class="shell">
      <header>
        <a class="skip" href="#main">Skip to content</a>
        <span class="brand">payorch</span>
        <label for="account">Merchant account</label>
        <select id="account" value={account} onChange={(e) => setAccount((e.target as HTMLSelectElement).value)}>
          {accounts.map((a) => (
            <option key={a} value={a}>{a}</option>
          ))}
        </select>
        <span class="who">{session.user.email} ({session.user.role})</span>
        <button type="button" onClick={async () => { await signOut().catch(() => undefined); onSignedOut(); }}>
          Sign out
        </button>
      </header>
      <nav aria-label="Sections">
        {link("#/transactions", "Transactions")}
        {link("#/buyers", "Buyers")}
        {link("#/vault-forward", "Vault forwarding")}
        {link("#/payment-services", "Payment services")}
        {sandbox && link("#/three-ds-scenarios", "3-D Secure scenarios")}
        {link("#/webhooks", "Webhooks")}
        {session.user.role === "admin" && link("#/team", "Team")}
        {link("#/password", "Change password")}
      </nav>
      <main id="main" tabIndex={-1}>{page}</main>
    </div>
  );
}

/** A session whose password was generated: it may only change it (every
 * other route refuses it), then the page opens. */
function FirstPassword({ session, onChanged, onSignedOut }: {
  session: Session; onChanged: (s: Session) => void; onSignedOut: () => void;
}) {
  return (
    <main class="signin" id="main">
      <p class="notice" role="status" data-testid="must-change-notice">
        Signed in as {session.user.email}. Your password was generated for you: choose your own to continue.
      </p>
      <ChangePassword onChanged={async () => { const s = await checkSession(); if (s) onChanged(s); }} />
      <button type="button" onClick={async () => { await signOut().catch(() => undefined); onSignedOut(); }}>
        Sign out
      </button>
    </main>
  );
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  useEffect(() => {
    onSessionEnded((why) => {
      setNotice(why);
      setSession(null);
    });
    loadSession().then(setSession).catch((e) => setError(message(e)));
  }, []);
  if (error) return <main><ErrorText error={error} /></main>;
  if (session === undefined) return <main><p role="status">Loading…</p></main>;
  if (!session) return <SignIn notice={notice} onSignedIn={(s) => { setNotice(""); setSession(s); }} />;
  if (session.user.must_change_password) {
    return <FirstPassword session={session} onChanged={setSession} onSignedOut={() => setSession(null)} />;
  }
  return <Shell session={session} onSignedOut={() => setSession(null)} />;
}

render(<App />, document.getElementById("app")!);
