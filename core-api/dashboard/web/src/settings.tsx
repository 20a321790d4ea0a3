import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { Ctx, ErrorText, message } from "./ui";

/** All pages of a list, through the API's cursors. */
export async function all(ctx: Ctx, path: string): Promise<any[]> {
  const out: any[] = [];
  let cursor = "";
  do {
    const q = new URLSearchParams({ limit: "100" });
    if (cursor) q.set("cursor", cursor);
    const page = await api("GET", `${path}?${q}`, { account: ctx.account });
    out.push(...page.items);
    cursor = page.next_cursor ?? "";
  } while (cursor);
  return out;
}

// ---- webhook subscriptions ----

export function WebhookSubscriptions({ ctx }: { ctx: Ctx }) {
  const [items, setItems] = useState<any[]>([]);
  const [error, setError] = useState("");
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState("");
  const [secret, setSecret] = useState("");
  const [open, setOpen] = useState("");
  const write = ctx.can("webhook-subscriptions.write");
  const load = () => all(ctx, "/webhook-subscriptions").then(setItems).catch((e) => setError(message(e)));
  useEffect(() => {
    load();
  }, [ctx.account]);

  async function create(ev: Event) {
    ev.preventDefault();
    setError("");
    setSecret("");
    const names = events.split(/[\s,]+/).filter(Boolean);
    try {
      const sub = await api("POST", "/webhook-subscriptions", { account: ctx.account },
        { url, event_names: names.length ? names : null });
      setSecret(sub.secret);
      setUrl("");
      setEvents("");
      await load();
    } catch (e) {
      setError(message(e));
    }
  }
  async function rotate(sub: any) {
    setError("");
    setSecret("");
    try {
      const r = await api("POST", `/webhook-subscriptions/${sub.id}/rotate-secret`, { account: ctx.account }, {});
      setSecret(r.secret);
      await load();
    } catch (e) {
      setError(message(e));
    }
  }

  return (
    <section aria-labelledby="wh-title">
      <h1 id="wh-title">Webhook subscriptions</h1>
      <ErrorText error={error} />
      {secret && (
        <p class="secret" role="status">
          Signing secret, shown this once: <code>{secret}</code>
        </p>
      )}
      {items.length === 0 && <p>No subscriptions.</p>}
      <ul class="methods" aria-label="Subscriptions">
        {items.map((s) => (
          <li key={s.id}>
            <strong>{s.url}</strong> {s.active ? "" : `(inactive${s.disabled_reason ? ": " + s.disabled_reason : ""})`}
            <div>Events: {s.event_names ? s.event_names.join(", ") : "all"}</div>
            {s.secret_rotation_ends_at && <div>The previous secret signs until {s.secret_rotation_ends_at}.</div>}
            <div class="row-actions">
              <button type="button" aria-expanded={open === s.id} onClick={() => setOpen(open === s.id ? "" : s.id)}>
                Deliveries of {s.url}
              </button>
              {write && <button type="button" onClick={() => rotate(s)}>Rotate secret of {s.url}</button>}
              {write && (
                <button type="button" onClick={() => api("DELETE", `/webhook-subscriptions/${s.id}`, { account: ctx.account })
                  .then(load).catch((e) => setError(message(e)))}>Delete {s.url}</button>
              )}
            </div>
            {open === s.id && <Deliveries ctx={ctx} sub={s} write={write} />}
          </li>
        ))}
      </ul>
      {write && (
        <form class="editor" onSubmit={create} aria-labelledby="wh-new">
          <h2 id="wh-new">New subscription</h2>
          <div class="field">
            <label for="wh-url">Endpoint URL</label>
            <input id="wh-url" type="url" required value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
          </div>
          <div class="field">
            <label for="wh-events">Event names (blank: all)</label>
            <input id="wh-events" value={events} onInput={(e) => setEvents((e.target as HTMLInputElement).value)} />
          </div>
          <div class="buttons"><button type="submit">Create subscription</button></div>
        </form>
      )}
    </section>
  );
}

function Deliveries({ ctx, sub, write }: { ctx: Ctx; sub: any; write: boolean }) {
  const [items, setItems] = useState<any[]>([]);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const load = () =>
    api("GET", `/webhook-subscriptions/${sub.id}/deliveries`, { account: ctx.account })
      .then((l) => setItems(l.items))
      .catch((e) => setError(message(e)));
  useEffect(() => {
    load();
  }, [sub.id]);
  async function retry(d: any) {
    setError("");
    try {
      await api("POST", `/events/${d.event_id}/replay`, { account: ctx.account }, { subscription_id: sub.id });
      setNote(`Delivery of ${d.event_name} queued again.`);
      await load();
    } catch (e) {
      setError(message(e));
    }
  }
  return (
    <div class="deliveries">
      <p role="status">{note}</p>
      <ErrorText error={error} />
      {items.length === 0 && <p>No deliveries yet.</p>}
      <ol aria-label={`Deliveries of ${sub.url}`}>
        {items.map((d) => (
          <li key={d.id}>
            <strong>{d.event_name}</strong> {d.status} <code>{d.event_id}</code>
            <ul>
              {d.attempts.map((a: any, i: number) => (
                <li key={i}>
                  {a.created_at}: {a.status}, {a.response_code != null ? `HTTP ${a.response_code}` : "no answer"}
                  {a.error ? ` (${a.error})` : ""}, {a.latency_ms} ms
                  <Exchange ctx={ctx} delivery={d} attempt={a} n={i + 1} />
                </li>
              ))}
            </ul>
            {write && <button type="button" onClick={() => retry(d)}>Retry {d.event_name}</button>}
          </li>
        ))}
      </ol>
    </div>
  );
}

/** Headers as the API gives them (name to value), one per line. */
function headerLines(h: Record<string, string> | null | undefined): string {
  const names = Object.keys(h ?? {}).sort();
  return names.length ? names.map((n) => `${n}: ${h![n]}`).join("\n") : "(none)";
}

/**
 * One attempt's request and response, folded. The subscription's listing
 * leaves the request body out (it is the event's payload, the same on
 * every attempt): it is read from the event's listing when first opened.
 */
function Exchange({ ctx, delivery, attempt, n }: { ctx: Ctx; delivery: any; attempt: any; n: number }) {
  const req = attempt.request;
  const res = attempt.response;
  const [body, setBody] = useState<string | null>(req?.body ?? null);
  const [error, setError] = useState("");
  async function loadBody(ev: Event) {
    if (!(ev.currentTarget as HTMLDetailsElement).open || body != null) return;
    try {
      const l = await api("GET", `/events/${delivery.event_id}/deliveries`, { account: ctx.account });
      const mine = l.items.find((x: any) => x.id === delivery.id);
      const sent = mine?.attempts.find((x: any) => x.request?.body != null);
      setBody(sent ? sent.request.body : "");
    } catch (e) {
      setError(message(e));
    }
  }
  const label = `attempt ${n} of ${delivery.event_name}`;
  return (
    <details class="exchange">
      <summary>Request and response of {label}</summary>
      <p><strong>Request</strong></p>
      {req ? (
        <>
          <p>POST <code>{req.url}</code></p>
          <pre>{headerLines(req.headers)}</pre>
          <details onToggle={loadBody}>
            <summary>Request body of {label}</summary>
            <ErrorText error={error} />
            <pre>{body ?? "Loading…"}</pre>
          </details>
        </>
      ) : (
        <p>No request was sent.</p>
      )}
      <p><strong>Response</strong></p>
      {res ? (
        <>
          <p>HTTP {res.status_code}</p>
          <pre>{headerLines(res.headers)}</pre>
          <p>Body{res.body_truncated ? " (longer than shown: its first 4 KiB are kept)" : ""}:</p>
          <pre>{res.body === "" ? "(empty)" : res.body}</pre>
        </>
      ) : (
        <p>No response{attempt.error ? `: ${attempt.error}` : ""}.</p>
      )}
    </details>
  );
}
