import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { Ctx, ErrorText, message } from "./ui";

// Vault forwarding configs and their authentication methods, on
// vault-proxy's public API: the secrets typed here go from the browser
// straight to vault-proxy, never through core-api, and are never shown
// again (vault-proxy answers them as set, without a value).

type Kind = "signature" | "mtls" | "mle";
interface FieldSpec {
  key: string;
  label: string;
  secret?: boolean;
  multiline?: boolean;
}
// The fields of each kind (docs/vault-forward-authentication.md).
const kinds: Record<Kind, { label: string; fields: FieldSpec[] }> = {
  signature: {
    label: "HTTP message signature",
    fields: [
      { key: "algorithm", label: "Algorithm (hmac-sha256, ed25519, ...)" },
      { key: "key_id", label: "Key id" },
      { key: "key", label: "Key", secret: true, multiline: true },
      { key: "covered_components", label: "Covered components" },
      { key: "label", label: "Signature label" },
      { key: "expires_in", label: "Expires in (seconds)" },
    ],
  },
  mtls: {
    label: "Mutual TLS",
    fields: [
      { key: "certificate", label: "Client certificate (PEM)", multiline: true },
      { key: "private_key", label: "Private key (PEM)", secret: true, multiline: true },
      { key: "ca_certificate", label: "CA certificate (PEM)", multiline: true },
    ],
  },
  mle: {
    label: "Payload encryption",
    fields: [
      { key: "public_key", label: "Public key (PEM)", multiline: true },
      { key: "key_id", label: "Key id" },
      { key: "algorithm", label: "Key algorithm" },
      { key: "encryption", label: "Content encryption" },
    ],
  },
};

const opts = (ctx: Ctx) => ({ account: ctx.account, vault: true });

export function ForwardConfigs({ ctx }: { ctx: Ctx }) {
  const [items, setItems] = useState<any[]>([]);
  const [cursor, setCursor] = useState("");
  const [next, setNext] = useState<string | null>(null);
  const [prev, setPrev] = useState<string | null>(null);
  const [error, setError] = useState("");
  const [name, setName] = useState("");
  const [hosts, setHosts] = useState("");
  const write = ctx.can("vault-forward-configs.write");

  async function load() {
    try {
      const q = new URLSearchParams({ limit: "20" });
      if (cursor) q.set("cursor", cursor);
      const page = await api("GET", `/vault-forward/configs?${q}`, opts(ctx));
      setItems(page.items);
      setNext(page.next_cursor);
      setPrev(page.previous_cursor);
    } catch (e) {
      setError(message(e));
    }
  }
  useEffect(() => {
    load();
  }, [ctx.account, cursor]);

  async function create(ev: Event) {
    ev.preventDefault();
    setError("");
    try {
      const cfg = await api("POST", "/vault-forward/configs", opts(ctx), { display_name: name, hosts: splitHosts(hosts) });
      location.hash = `#/vault-forward/${cfg.id}`;
    } catch (e) {
      setError(message(e));
    }
  }

  return (
    <section aria-labelledby="vf-title">
      <h1 id="vf-title">Vault forwarding</h1>
      <ErrorText error={error} />
      <table>
        <thead>
          <tr><th scope="col">Name</th><th scope="col">Hosts</th></tr>
        </thead>
        <tbody>
          {items.map((c) => (
            <tr key={c.id}>
              <td><a href={`#/vault-forward/${c.id}`}>{c.display_name}</a></td>
              <td>{c.hosts.join(", ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {items.length === 0 && <p>No forwarding configs.</p>}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={!prev} onClick={() => setCursor(prev!)}>Previous page</button>
        <button type="button" disabled={!next} onClick={() => setCursor(next!)}>Next page</button>
      </nav>
      {write && (
        <form class="editor" onSubmit={create} aria-labelledby="vf-new">
          <h2 id="vf-new">New forwarding config</h2>
          <div class="field">
            <label for="vf-name">Name</label>
            <input id="vf-name" required value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </div>
          <div class="field">
            <label for="vf-hosts">Hosts (one per line: host or host:port)</label>
            <textarea id="vf-hosts" rows={3} required value={hosts} onInput={(e) => setHosts((e.target as HTMLTextAreaElement).value)} />
          </div>
          <div class="buttons"><button type="submit">Create config</button></div>
        </form>
      )}
    </section>
  );
}

function splitHosts(text: string): string[] {
  return text.split(/\r?\n/).map((h) => h.trim()).filter(Boolean);
}

export function ForwardConfig({ ctx, id }: { ctx: Ctx; id: string }) {
  const [cfg, setCfg] = useState<any>(null);
  const [methods, setMethods] = useState<any[]>([]);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const [hosts, setHosts] = useState("");
  const [kind, setKind] = useState<Kind>("signature");
  const [methodName, setMethodName] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const write = ctx.can("vault-forward-configs.write");

  async function load() {
    try {
      const [c, m] = await Promise.all([
        api("GET", `/vault-forward/configs/${id}`, opts(ctx)),
        api("GET", `/vault-forward/configs/${id}/authentications`, opts(ctx)),
      ]);
      setCfg(c);
      setHosts(c.hosts.join("\n"));
      setMethods(m.items ?? []);
    } catch (e) {
      setError(message(e));
    }
  }
  useEffect(() => {
    load();
  }, [id, ctx.account]);

  async function run(done: string, fn: () => Promise<unknown>) {
    setError("");
    setNote("");
    try {
      await fn();
      setNote(done);
      await load();
      return true;
    } catch (e) {
      setError(message(e));
      return false;
    }
  }

  async function addMethod(ev: Event) {
    ev.preventDefault();
    // Exactly as typed: no trimming; an empty field is not sent.
    const list = kinds[kind].fields
      .filter((f) => (fields[f.key] ?? "") !== "")
      .map((f) => ({ key: f.key, value: fields[f.key] }));
    const ok = await run("Authentication method added.", () =>
      api("POST", `/vault-forward/configs/${id}/authentications`, opts(ctx), { kind, display_name: methodName, fields: list }),
    );
    if (ok) {
      setFields({});
      setMethodName("");
    }
  }

  if (!cfg) return <section><h1>Forwarding config</h1><ErrorText error={error} /></section>;
  return (
    <section aria-labelledby="vfc-title">
      <p><a href="#/vault-forward">All forwarding configs</a></p>
      <h1 id="vfc-title">{cfg.display_name}</h1>
      <p role="status">{note}</p>
      <ErrorText error={error} />
      <h2>Hosts</h2>
      {write ? (
        <form class="editor" aria-label="Hosts" onSubmit={(e) => {
          e.preventDefault();
          run("Hosts saved.", () => api("PUT", `/vault-forward/configs/${id}`, opts(ctx), { hosts: splitHosts(hosts) }));
        }}>
          <div class="field">
            <label for="vfc-hosts">Hosts (one per line)</label>
            <textarea id="vfc-hosts" rows={3} value={hosts} onInput={(e) => setHosts((e.target as HTMLTextAreaElement).value)} />
          </div>
          <div class="buttons"><button type="submit">Save hosts</button></div>
        </form>
      ) : (
        <ul>{cfg.hosts.map((h: string) => <li key={h}>{h}</li>)}</ul>
      )}
      <h2>Authentication methods</h2>
      {methods.length === 0 && <p>None.</p>}
      <ul class="methods" aria-label="Authentication methods">
        {methods.map((m) => (
          <li key={m.id}>
            <strong>{m.display_name}</strong> ({m.kind}) <code>{m.id}</code>
            <dl class="facts">
              {m.fields.map((f: any) => (
                <div key={f.key}>
                  <dt>{f.key}</dt>
                  <dd>{f.value !== undefined ? f.value : <span class="secret-set">set (write-only)</span>}</dd>
                </div>
              ))}
            </dl>
            {write && (
              <button type="button" aria-label={`Delete ${m.display_name}`}
                onClick={() => run("Authentication method deleted.", () =>
                  api("DELETE", `/vault-forward/configs/${id}/authentications/${m.id}`, opts(ctx)))}>
                Delete
              </button>
            )}
          </li>
        ))}
      </ul>
      {write && (
        <form class="editor" onSubmit={addMethod} aria-labelledby="am-title" autocomplete="off">
          <h2 id="am-title">Add authentication</h2>
          <div class="field">
            <label for="am-kind">Kind</label>
            <select id="am-kind" value={kind} onChange={(e) => { setKind((e.target as HTMLSelectElement).value as Kind); setFields({}); }}>
              {(Object.keys(kinds) as Kind[]).map((k) => <option key={k} value={k}>{kinds[k].label}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="am-name">Name</label>
            <input id="am-name" required value={methodName} onInput={(e) => setMethodName((e.target as HTMLInputElement).value)} />
          </div>
          {kinds[kind].fields.map((f) => {
            const set = (e: Event) => setFields({ ...fields, [f.key]: (e.target as HTMLInputElement).value });
            return (
              <div class="field" key={kind + f.key}>
                <label for={`am-${f.key}`}>{f.label}</label>
                {f.multiline ? (
                  <textarea id={`am-${f.key}`} rows={f.secret ? 4 : 3} spellcheck={false} value={fields[f.key] ?? ""} onInput={set} />
                ) : (
                  <input id={`am-${f.key}`} spellcheck={false} value={fields[f.key] ?? ""} onInput={set} />
                )}
              </div>
            );
          })}
          <div class="buttons"><button type="submit">Add authentication</button></div>
        </form>
      )}
    </section>
  );
}
