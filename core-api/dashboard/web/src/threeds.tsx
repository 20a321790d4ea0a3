import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { all } from "./settings";
import { Ctx, ErrorText, message } from "./ui";

// The sandbox 3-D Secure simulator's scenarios: an ordered list, first
// match wins (docs/three-d-secure.md). Absent in production.
//
// A card_number condition is card data: a write that carries one goes
// from the browser straight to vault-proxy, which vaults the number and
// hands core-api a reference; core-api answers it as card_condition, the
// card's first 6 digits and last 4, which is all the page ever shows. A
// write without a number goes to core-api, and keeps a stored card
// condition by sending its reference back.

const conditionFields: [string, string, string][] = [
  ["email_address", "Email address", "text"],
  ["first_name", "First name", "text"],
  ["last_name", "Last name", "text"],
  ["amount", "Amount (minor units)", "number"],
  ["external_identifier", "External identifier", "text"],
  ["bin", "Card BIN prefix", "text"],
];
const authStatuses = ["Y", "A", "N", "R", "U", "C", "timeout"];
const resultStatuses = ["Y", "N", "timeout"];
const versions = ["2.2.0", "2.1.0", "2.3.1"];

interface CardCondition {
  id: string;
  bin: string;
  last4: string;
}
interface Form {
  id: string; // empty: a new scenario
  conditions: Record<string, string>;
  card: string; // a card number typed into the page, for vault-proxy
  kept: CardCondition | null; // the edited scenario's card condition
  dropCard: boolean;
  version: string;
  auth: string;
  result: string;
}
const emptyForm: Form = { id: "", conditions: {}, card: "", kept: null, dropCard: false, version: "2.2.0", auth: "Y", result: "Y" };

const masked = (c: CardCondition) => `${c.bin}…${c.last4}`;

function describe(s: any): string {
  const c = Object.entries(s.conditions ?? {}).filter(([, v]) => v !== null && v !== undefined);
  const cond = c.length
    ? c.map(([k, v]) => (k === "card_condition" ? `card = ${masked(v as CardCondition)}` : `${k} = ${v}`)).join(", ")
    : "every payment";
  const o = s.outcome;
  const res = o.result ? `, challenge result ${o.result.transaction_status}` : "";
  return `${cond} → ${o.authentication.transaction_status}${res} (${o.version ?? "2.2.0"})`;
}

export function ThreeDSScenarios({ ctx }: { ctx: Ctx }) {
  const [items, setItems] = useState<any[]>([]);
  const [error, setError] = useState("");
  const [form, setForm] = useState<Form>(emptyForm);
  const [dragged, setDragged] = useState("");
  const write = ctx.can("three-ds-scenarios.write");

  async function load() {
    try {
      setItems(await all(ctx, "/three-ds-scenarios"));
    } catch (e) {
      setError(message(e));
    }
  }
  useEffect(() => {
    load();
  }, [ctx.account]);

  async function run(fn: () => Promise<unknown>): Promise<boolean> {
    setError("");
    try {
      await fn();
      await load();
      return true;
    } catch (e) {
      setError(message(e));
      return false;
    }
  }
  const move = (id: string, where: "before_id" | "after_id", other: string) =>
    run(() => api("POST", `/three-ds-scenarios/${id}/move`, { account: ctx.account }, { [where]: other }));

  async function save(ev: Event) {
    ev.preventDefault();
    const conditions: Record<string, unknown> = {};
    for (const [k, , type] of conditionFields) {
      const v = form.conditions[k]?.trim();
      conditions[k] = v ? (type === "number" ? Number(v) : v) : null;
    }
    const outcome: Record<string, unknown> = { version: form.version, authentication: { transaction_status: form.auth } };
    outcome.result = form.auth === "C" ? { transaction_status: form.result } : null;
    // The number exactly as typed (vault-proxy takes spaces and says what
    // is wrong without repeating it); only vault-proxy may receive it.
    const vault = form.card !== "";
    if (vault) conditions.card_number = form.card;
    else if (form.kept && !form.dropCard) conditions.card_condition = { id: form.kept.id };
    const body = { conditions, outcome };
    const opts = { account: ctx.account, vault };
    const ok = await run(() =>
      form.id
        ? api("PUT", `/three-ds-scenarios/${form.id}`, opts, body)
        : api("POST", "/three-ds-scenarios", opts, body),
    );
    // Kept on a refusal, to be corrected; the number is typed again.
    setForm(ok ? emptyForm : { ...form, card: "" });
  }

  function edit(s: any) {
    const conditions: Record<string, string> = {};
    for (const [k] of conditionFields) if (s.conditions?.[k] != null) conditions[k] = String(s.conditions[k]);
    setForm({ id: s.id, conditions, card: "", kept: s.conditions?.card_condition ?? null, dropCard: false,
      version: s.outcome.version ?? "2.2.0", auth: s.outcome.authentication.transaction_status,
      result: s.outcome.result?.transaction_status ?? "Y" });
  }

  return (
    <section aria-labelledby="tds-title">
      <h1 id="tds-title">3-D Secure scenarios</h1>
      <p>The sandbox simulator answers with the first scenario whose conditions all hold.</p>
      <ErrorText error={error} />
      <ol class="scenarios" aria-label="Scenarios in evaluation order">
        {items.map((s, i) => (
          <li key={s.id} data-id={s.id} draggable={write}
            onDragStart={() => setDragged(s.id)}
            onDragOver={(e) => write && e.preventDefault()}
            onDrop={(e) => { e.preventDefault(); if (dragged && dragged !== s.id) move(dragged, "before_id", s.id); setDragged(""); }}>
            <span class="scenario-text">{describe(s)}</span>
            {write && (
              <span class="row-actions">
                <button type="button" disabled={i === 0} aria-label={`Move scenario ${i + 1} up`}
                  onClick={() => move(s.id, "before_id", items[i - 1].id)}>Up</button>
                <button type="button" disabled={i === items.length - 1} aria-label={`Move scenario ${i + 1} down`}
                  onClick={() => move(s.id, "after_id", items[i + 1].id)}>Down</button>
                <button type="button" aria-label={`Edit scenario ${i + 1}`} onClick={() => edit(s)}>Edit</button>
                <button type="button" aria-label={`Delete scenario ${i + 1}`}
                  onClick={() => run(() => api("DELETE", `/three-ds-scenarios/${s.id}`, { account: ctx.account }))}>Delete</button>
              </span>
            )}
          </li>
        ))}
      </ol>
      {items.length === 0 && <p>No scenarios: every payment is authenticated (Y).</p>}
      {write && (
        <form class="editor" onSubmit={save} aria-labelledby="tds-form-title">
          <h2 id="tds-form-title">{form.id ? "Edit scenario" : "Add scenario"}</h2>
          {conditionFields.map(([k, label, type]) => (
            <div class="field" key={k}>
              <label for={`c-${k}`}>{label}</label>
              <input id={`c-${k}`} type={type} value={form.conditions[k] ?? ""}
                onInput={(e) => setForm({ ...form, conditions: { ...form.conditions, [k]: (e.target as HTMLInputElement).value } })} />
            </div>
          ))}
          <div class="field">
            <label for="c-card_number">Card number (sent to vault-proxy only)</label>
            <input id="c-card_number" inputMode="numeric" autocomplete="off" spellcheck={false}
              aria-describedby={form.kept ? "c-card-kept" : undefined} value={form.card}
              onInput={(e) => setForm({ ...form, card: (e.target as HTMLInputElement).value })} />
            {form.kept && (
              <p id="c-card-kept" class="hint">
                Card {masked(form.kept)}: kept unless another number is typed or it is removed.
              </p>
            )}
          </div>
          {form.kept && (
            <div class="check">
              <input id="c-card-drop" type="checkbox" checked={form.dropCard}
                onChange={(e) => setForm({ ...form, dropCard: (e.target as HTMLInputElement).checked })} />
              <label for="c-card-drop">Remove the card condition {masked(form.kept)}</label>
            </div>
          )}
          <div class="field">
            <label for="o-version">Protocol version</label>
            <select id="o-version" value={form.version} onChange={(e) => setForm({ ...form, version: (e.target as HTMLSelectElement).value })}>
              {versions.map((v) => <option key={v} value={v}>{v}</option>)}
            </select>
          </div>
          <div class="field">
            <label for="o-auth">Authentication status</label>
            <select id="o-auth" value={form.auth} onChange={(e) => setForm({ ...form, auth: (e.target as HTMLSelectElement).value })}>
              {authStatuses.map((v) => <option key={v} value={v}>{v}</option>)}
            </select>
          </div>
          {form.auth === "C" && (
            <div class="field">
              <label for="o-result">Challenge result</label>
              <select id="o-result" value={form.result} onChange={(e) => setForm({ ...form, result: (e.target as HTMLSelectElement).value })}>
                {resultStatuses.map((v) => <option key={v} value={v}>{v}</option>)}
              </select>
            </div>
          )}
          <div class="buttons">
            <button type="submit">{form.id ? "Save scenario" : "Add scenario"}</button>
            {form.id && <button type="button" onClick={() => setForm(emptyForm)}>Cancel</button>}
          </div>
        </form>
      )}
    </section>
  );
}
