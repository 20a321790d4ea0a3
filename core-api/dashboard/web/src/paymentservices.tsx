import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import connectorList from "./connectors.json";
import { all } from "./settings";
import { Ctx, ErrorText, message } from "./ui";

// Payment services on core-api's public API (docs/payment-services.md).
// A processor's credentials are not card data: they go to core-api, which
// seals them with Vault transit before they reach its database and never
// answers them; credentials_set names the fields stored. The page shows
// those names, never a value, and clears its credential inputs once sent.

type Kind = "string" | "integer" | "boolean";
interface Setting {
  name: string;
  kind: Kind;
  choices?: string[];
  hint?: string;
}
interface ConnectorSpec {
  methods: string[];
  settings: Setting[];
  credentials: string[];
}

// The connectors that payment services configure, with their methods and
// fields as docs/payment-services.md documents them; web_test.go holds
// the file to connector.Schemas in Go. The API publishes no list: a
// connector this environment does not register is refused with a message
// naming those it does, and every value is checked there, so these only
// shape the form.
const connectors: Record<string, ConnectorSpec> = connectorList as Record<string, ConnectorSpec>;

const antiFraudVersions = ["v2.1", "v10.2"];

const nameOf = (ps: any): string => ps.display_name ?? ps.connector;

/** The settings object to send: base (the stored settings) with each of
 * the connector's fields as typed; an empty field is left out. */
function settingsBody(spec: Setting[], base: Record<string, unknown>, typed: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const s of spec) {
    const v = typed[s.name] ?? "";
    if (v === "") delete out[s.name];
    else if (s.kind === "boolean") out[s.name] = v === "true";
    // Not a whole number: sent as typed, for the API to say what is wrong.
    else if (s.kind === "integer") out[s.name] = /^-?\d+$/.test(v) ? Number(v) : v;
    else out[s.name] = v;
  }
  return out;
}

export function PaymentServices({ ctx }: { ctx: Ctx }) {
  const [items, setItems] = useState<any[]>([]);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const [editing, setEditing] = useState("");
  const [newForm, setNewForm] = useState(0); // a new key empties the create form
  const write = ctx.can("payment-services.write");
  const load = () => all(ctx, "/payment-services").then(setItems).catch((e) => setError(message(e)));
  useEffect(() => {
    load();
  }, [ctx.account]);

  // The note comes with the reloaded state, never before it.
  async function saved(done: string) {
    setError("");
    await load();
    setNote(done);
  }
  async function update(ps: any, body: Record<string, unknown>, done: string) {
    setError("");
    setNote("");
    try {
      await api("PUT", `/payment-services/${ps.id}`, { account: ctx.account }, body);
      await saved(done);
    } catch (e) {
      setError(message(e));
    }
  }

  return (
    <section aria-labelledby="ps-title">
      <h1 id="ps-title">Payment services</h1>
      <p role="status">{note}</p>
      <ErrorText error={error} />
      {items.length === 0 && <p>No payment services.</p>}
      <ul class="methods" aria-label="Payment services">
        {items.map((ps) => {
          const name = nameOf(ps);
          const version = ps.settings?.api_version ?? "v2.1";
          return (
            <li key={ps.id}>
              <strong>{name}</strong> ({ps.connector}, {ps.method}){ps.default && " · default"}{!ps.active && " · inactive"}
              <dl class="facts">
                {Object.entries(ps.settings ?? {}).map(([k, v]) => (
                  <div key={k}><dt>{k}</dt><dd>{String(v)}</dd></div>
                ))}
                <div>
                  <dt>credentials</dt>
                  <dd>{ps.credentials_set.length ? <span class="secret-set">set: {ps.credentials_set.join(", ")}</span> : "none"}</dd>
                </div>
              </dl>
              {ps.connector === "mock-antifraud" && (
                <fieldset class="toggle" disabled={!write}>
                  <legend>Anti-fraud API version of {name}</legend>
                  {antiFraudVersions.map((v) => (
                    <label key={v}>
                      <input type="radio" name={`v-${ps.id}`} value={v} checked={version === v}
                        onChange={() => update(ps, { settings: { ...ps.settings, api_version: v } }, `${name} now uses API ${v}.`)} />
                      {" "}{v}
                    </label>
                  ))}
                </fieldset>
              )}
              {write && (
                <div class="row-actions">
                  <button type="button" aria-expanded={editing === ps.id} onClick={() => { setNote(""); setEditing(editing === ps.id ? "" : ps.id); }}>
                    Edit {name}
                  </button>
                  <button type="button" onClick={() => update(ps, { active: !ps.active }, `${name} ${ps.active ? "deactivated" : "activated"}.`)}>
                    {ps.active ? `Deactivate ${name}` : `Activate ${name}`}
                  </button>
                </div>
              )}
              {write && editing === ps.id && (
                <ServiceForm key={ps.updated_at} ctx={ctx} ps={ps} cancel={() => setEditing("")}
                  done={(n) => { setEditing(""); return saved(n); }} />
              )}
            </li>
          );
        })}
      </ul>
      {write && (
        <ServiceForm key={newForm} ctx={ctx}
          done={(n) => { setNewForm(newForm + 1); return saved(n); }} />
      )}
    </section>
  );
}

/** The form that creates a payment service (no ps) or edits ps: its name,
 * default flag and settings, and a replacement of any of its credentials. */
function ServiceForm({ ctx, ps, done, cancel }: { ctx: Ctx; ps?: any; done: (note: string) => Promise<void>; cancel?: () => void }) {
  const [connector, setConnector] = useState<string>(ps?.connector ?? "mock-card");
  const spec: ConnectorSpec | undefined = connectors[connector];
  const [method, setMethod] = useState<string>(ps?.method ?? spec?.methods[0] ?? "");
  const [name, setName] = useState<string>(ps?.display_name ?? "");
  const [isDefault, setDefault] = useState<boolean>(!!ps?.default);
  const [settings, setSettings] = useState<Record<string, string>>(
    Object.fromEntries(Object.entries(ps?.settings ?? {}).map(([k, v]) => [k, String(v)])));
  const [creds, setCreds] = useState<Record<string, string>>({});
  const [error, setError] = useState("");
  const p = ps ? `ps-${ps.id}` : "ps-new";
  const title = ps ? `Edit ${nameOf(ps)}` : "New payment service";
  // A stored name the list of connectors does not know is still replaceable.
  const credNames = [...new Set([...(spec?.credentials ?? []), ...(ps?.credentials_set ?? [])])];

  function chooseConnector(c: string) {
    setConnector(c);
    setMethod(connectors[c]?.methods[0] ?? "");
    setSettings({});
    setCreds({});
  }

  async function submit(ev: Event) {
    ev.preventDefault();
    setError("");
    // Credentials exactly as typed, only those typed: on an edit the API
    // keeps the stored ones not sent.
    const typed = Object.entries(creds).filter(([, v]) => v !== "");
    const credentials = typed.length ? Object.fromEntries(typed) : undefined;
    const body: Record<string, unknown> = {};
    if (spec) body.settings = settingsBody(spec.settings, ps?.settings ?? {}, settings);
    try {
      if (ps) {
        if (name !== (ps.display_name ?? "")) body.display_name = name === "" ? null : name;
        if (isDefault !== ps.default) body.default = isDefault;
        if (credentials) body.credentials = credentials;
        await api("PUT", `/payment-services/${ps.id}`, { account: ctx.account }, body);
      } else {
        Object.assign(body, { connector, method, default: isDefault, credentials: credentials ?? {} });
        if (name !== "") body.display_name = name;
        await api("POST", "/payment-services", { account: ctx.account }, body);
      }
    } catch (e) {
      setError(message(e));
      return;
    }
    setCreds({});
    await done(ps ? `${name || ps.connector} saved.` : `Payment service ${name || connector} created.`);
  }

  const input = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);
  return (
    <form class="editor" onSubmit={submit} aria-labelledby={`${p}-title`} autocomplete="off">
      <h2 id={`${p}-title`}>{title}</h2>
      <ErrorText error={error} />
      {!ps && (
        <>
          <div class="field">
            <label for={`${p}-connector`}>Connector</label>
            <select id={`${p}-connector`} value={connector} onChange={input(chooseConnector)}>
              {Object.keys(connectors).map((c) => <option key={c} value={c}>{c}</option>)}
            </select>
          </div>
          <div class="field">
            <label for={`${p}-method`}>Payment method</label>
            <select id={`${p}-method`} value={method} onChange={input(setMethod)}>
              {(spec?.methods ?? []).map((m) => <option key={m} value={m}>{m}</option>)}
            </select>
          </div>
        </>
      )}
      <div class="field">
        <label for={`${p}-name`}>Display name (optional)</label>
        <input id={`${p}-name`} maxLength={200} value={name} onInput={input(setName)} />
      </div>
      <div class="check">
        <input id={`${p}-default`} type="checkbox" checked={isDefault} onChange={(e) => setDefault((e.target as HTMLInputElement).checked)} />
        <label for={`${p}-default`}>Default for its payment method</label>
      </div>
      {spec && spec.settings.length > 0 && (
        <fieldset>
          <legend>Settings</legend>
          {spec.settings.map((s) => {
            const id = `${p}-s-${s.name}`;
            const set = input((v) => setSettings({ ...settings, [s.name]: v }));
            const choices = s.choices ?? (s.kind === "boolean" ? ["true", "false"] : null);
            return (
              <div class="field" key={connector + s.name}>
                <label for={id}>{s.name}{s.hint ? ` (${s.hint})` : ""}</label>
                {choices ? (
                  <select id={id} value={settings[s.name] ?? ""} onChange={set}>
                    <option value="">not set</option>
                    {choices.map((c) => <option key={c} value={c}>{c}</option>)}
                  </select>
                ) : (
                  <input id={id} type={s.kind === "integer" ? "number" : "text"} spellcheck={false}
                    value={settings[s.name] ?? ""} onInput={set} />
                )}
              </div>
            );
          })}
        </fieldset>
      )}
      {credNames.length > 0 && (
        <fieldset aria-describedby={`${p}-cred-hint`}>
          <legend>Credentials (write-only)</legend>
          <p id={`${p}-cred-hint`} class="hint">
            {ps
              ? `Stored: ${ps.credentials_set.length ? ps.credentials_set.join(", ") : "none"}. Type a new value to replace one; an empty field means unchanged.`
              : "Sent to core-api, which seals them with Vault transit; never shown again."}
          </p>
          {credNames.map((c) => (
            <div class="field" key={connector + c}>
              <label for={`${p}-c-${c}`}>{ps ? `New ${c} (empty: unchanged)` : c}</label>
              <input id={`${p}-c-${c}`} type="password" autocomplete="new-password" spellcheck={false}
                value={creds[c] ?? ""} onInput={input((v) => setCreds({ ...creds, [c]: v }))} />
            </div>
          ))}
        </fieldset>
      )}
      <div class="buttons">
        <button type="submit">{ps ? `Save ${nameOf(ps)}` : "Create payment service"}</button>
        {cancel && <button type="button" onClick={cancel}>Cancel</button>}
      </div>
    </form>
  );
}
