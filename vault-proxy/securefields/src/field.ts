// The page each secure field's iframe loads, on vault-proxy's origin. It
// holds the buyer's digits, tells the merchant's page (the parent, at the
// origin vault-proxy checked against the merchant account's allowed
// origins) only metadata, and, in the controlling field, collects its
// siblings' values over a BroadcastChannel of this origin and sends the
// card to PUT /checkout/sessions/{id}/fields.

import {
  binOf, codeState, digitsOf, expiryDigits, expiryState, formatExpiry, formatNumber, MAX_NUMBER_LENGTH, numberState,
  type FieldState, type Scheme,
} from "./card";
import {
  TAG, isEnvelope,
  type Envelope, type FieldKind, type FieldMeta, type FieldOptions, type FromField, type Sibling, type ToField, type VaultFailure,
} from "./messages";
import { sanitizeStyles, type StyleDecl, type Styles } from "./styles";

const MASK = "\u2022";

const LABELS: Record<FieldKind, string> = { number: "Card number", expiryDate: "Expiry date (MM/YY)", securityCode: "Security code" };
const PLACEHOLDERS: Record<FieldKind, string> = { number: "1234 1234 1234 1234", expiryDate: "MM/YY", securityCode: "CVC" };
const AUTOCOMPLETE: Record<FieldKind, string> = { number: "cc-number", expiryDate: "cc-exp", securityCode: "cc-csc" };
const ICONS = new Set(["visa", "mastercard", "amex", "discover", "diners", "jcb", "unionpay", "maestro"]);

const params = new URLSearchParams(location.search);
const session = params.get("session") ?? "";
const channel = params.get("channel") ?? "";
const parentOrigin = params.get("origin") ?? "";
const kind = params.get("field") as FieldKind;

let digits = "";
let options: FieldOptions = {};
let styles: Styles = {};
let masked = false;
let focused = false;
let scheme: Scheme | null = null; // the number's, told to the code field by the parent
let paymentMethodId: string | undefined;
let lastMeta = "";
let wasComplete = false;
let applied: string[] = [];

const input = document.getElementById("field") as HTMLInputElement;
const label = document.getElementById("label") as HTMLLabelElement;
let icon: HTMLImageElement | null = null;

function post(msg: FromField): void {
  const env: Envelope<FromField> = { ...msg, tag: TAG, channel, field: kind };
  window.parent.postMessage(env, parentOrigin);
}

function maxDigits(): number {
  switch (kind) {
    case "number": return MAX_NUMBER_LENGTH;
    case "expiryDate": return 4;
    default: return 4;
  }
}

function parse(raw: string): string {
  if (kind === "expiryDate") return expiryDigits(raw);
  return digitsOf(raw).slice(0, maxDigits());
}

function state(): FieldState & { scheme?: Scheme | null } {
  switch (kind) {
    case "number": return numberState(digits);
    case "expiryDate": return expiryState(digits, new Date());
    default: return codeState(digits, scheme);
  }
}

function display(): string {
  const shown = kind === "number" ? formatNumber(digits) : kind === "expiryDate" ? formatExpiry(digits) : digits;
  if (!masked) return shown;
  const keepFrom = kind === "number" && options.showLastFour && digits.length > 4 ? digits.length - 4 : Infinity;
  let n = 0;
  let out = "";
  for (const c of shown) {
    if (c >= "0" && c <= "9") {
      out += n >= keepFrom ? c : MASK;
      n++;
    } else {
      out += c;
    }
  }
  return out;
}

function render(): void {
  input.value = display();
  const st = state();
  input.setAttribute("aria-invalid", String(!st.empty && !st.valid));
  if (icon) {
    const s = kind === "number" ? numberState(digits).scheme : null;
    const name = s && ICONS.has(s) ? s : "generic";
    const src = `icons/${name}.svg`;
    if (icon.getAttribute("src") !== src) icon.setAttribute("src", src);
    icon.dataset.scheme = name;
  }
  applyStyles(st);
  report(st);
}

function report(st: FieldState & { scheme?: Scheme | null }): void {
  const meta: FieldMeta = { empty: st.empty, complete: st.complete, valid: st.valid };
  if (kind === "number") {
    meta.scheme = st.scheme ?? null;
    meta.bin = binOf(digits, st.complete);
    meta.last4 = st.complete ? digits.slice(-4) : null;
  }
  const key = JSON.stringify(meta);
  if (key !== lastMeta) {
    lastMeta = key;
    post({ type: "change", meta });
  }
  if (st.complete && st.valid && !wasComplete) post({ type: "complete" });
  wasComplete = st.complete && st.valid;
}

function applyStyles(st: FieldState): void {
  for (const p of applied) input.style.removeProperty(p);
  applied = [];
  const decls: Array<StyleDecl | undefined> = [styles.base, focused ? styles.focus : undefined,
    !st.empty && !st.valid ? styles.invalid : undefined, st.complete ? styles.complete : undefined];
  for (const d of decls) {
    for (const [p, v] of Object.entries(d ?? {})) {
      input.style.setProperty(p, v);
      applied.push(p);
    }
  }
}

function applyPlaceholderStyles(): void {
  for (const [p, v] of Object.entries(styles.placeholder ?? {})) document.documentElement.style.setProperty(`--sf-placeholder-${p}`, v);
}

// Unmasked, the browser edits the text and the digits are read back; a
// paste of "4111 1111-1111 1111" or an autofilled "12/2030" is parsed the
// same way.
input.addEventListener("input", () => {
  if (masked && input.value.includes(MASK)) {
    render(); // an edit the masked model did not see: show the model again
    return;
  }
  digits = parse(input.value);
  render();
});

// Masked, the text shows no digits to read back: edits are applied to the
// digits themselves (at the end, or replacing a selection of everything).
input.addEventListener("beforeinput", (e) => {
  if (!masked) return;
  const all = input.selectionStart === 0 && input.selectionEnd === input.value.length && input.value.length > 0;
  switch (e.inputType) {
    case "insertText":
    case "insertFromPaste":
    case "insertFromDrop":
    case "insertReplacementText": {
      const text = e.data ?? e.dataTransfer?.getData("text/plain") ?? "";
      e.preventDefault();
      const base = all || e.inputType === "insertReplacementText" ? "" : digits;
      digits = kind === "expiryDate" ? expiryDigits(base + text) : parse(base + text);
      break;
    }
    case "deleteContentBackward":
    case "deleteContentForward":
    case "deleteWordBackward":
    case "deleteByCut":
      e.preventDefault();
      digits = all || e.inputType === "deleteWordBackward" ? "" : digits.slice(0, -1);
      break;
    default:
      return;
  }
  render();
});

input.addEventListener("focus", () => {
  focused = true;
  applyStyles(state());
});
input.addEventListener("blur", () => {
  focused = false;
  applyStyles(state());
});

function setup(o: FieldOptions): void {
  options = o ?? {};
  styles = sanitizeStyles(options.styles);
  applyPlaceholderStyles();
  masked = options.masked === true;
  input.placeholder = typeof options.placeholder === "string" ? options.placeholder.slice(0, 64) : PLACEHOLDERS[kind];
  if (kind === "number" && options.schemeIcon === true && !icon) {
    icon = document.createElement("img");
    icon.className = "scheme-icon";
    icon.alt = "";
    icon.setAttribute("aria-hidden", "true");
    icon.width = 32;
    icon.height = 20;
    input.classList.add("with-icon");
    input.after(icon);
  }
  render();
}

// --- the form's fields, as siblings on this origin ---

const siblings = new BroadcastChannel(`${TAG}:${channel}`);
siblings.onmessage = (ev: MessageEvent) => {
  const m = ev.data as Sibling;
  if (m?.type !== "collect" || typeof m.id !== "string") return;
  const value = kind === "expiryDate" ? formatExpiry(digits) : digits;
  siblings.postMessage({ type: "value", id: m.id, field: kind, value, complete: state().complete } satisfies Sibling);
};

function collect(): Promise<Map<FieldKind, { value: string; complete: boolean }>> {
  const id = crypto.randomUUID();
  const got = new Map<FieldKind, { value: string; complete: boolean }>();
  got.set(kind, { value: kind === "expiryDate" ? formatExpiry(digits) : digits, complete: state().complete });
  return new Promise((resolve) => {
    const ch = new BroadcastChannel(`${TAG}:${channel}`);
    const done = (): void => {
      ch.close();
      resolve(got);
    };
    ch.onmessage = (ev: MessageEvent) => {
      const m = ev.data as Sibling;
      if (m?.type === "value" && m.id === id) {
        got.set(m.field, { value: String(m.value), complete: m.complete === true });
        if (got.size === 3 || (paymentMethodId && got.size >= 1)) done();
      }
    };
    ch.postMessage({ type: "collect", id } satisfies Sibling);
    setTimeout(done, 1000);
  });
}

async function submit(): Promise<void> {
  const values = await collect();
  const fail = (error: VaultFailure): void => post({ type: "failed", error });
  const need: FieldKind[] = paymentMethodId ? ["securityCode"] : ["number", "expiryDate"];
  const code = values.get("securityCode");
  const incomplete = need.filter((k) => !values.get(k)?.complete);
  if (code && code.value !== "" && !code.complete) incomplete.push("securityCode");
  if (incomplete.length > 0) {
    fail({ code: "invalid_fields", message: `complete these fields first: ${incomplete.join(", ")}` });
    return;
  }
  const pm: Record<string, string> = paymentMethodId
    ? { method: "id", id: paymentMethodId, security_code: code?.value ?? "" }
    : { method: "card", number: values.get("number")?.value ?? "", expiration_date: values.get("expiryDate")?.value ?? "" };
  if (!paymentMethodId && code?.value) pm.security_code = code.value;
  let resp: Response;
  try {
    resp = await fetch(`/checkout/sessions/${encodeURIComponent(session)}/fields`, {
      method: "PUT",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ payment_method: pm }),
      credentials: "omit",
      cache: "no-store",
      referrerPolicy: "no-referrer",
    });
  } catch {
    fail({ code: "network_error", message: "the card could not be sent; check the connection and try again" });
    return;
  }
  let body: Record<string, unknown> = {};
  try {
    body = (await resp.json()) as Record<string, unknown>;
  } catch {
    // an answer without a body: the status tells
  }
  if (!resp.ok) {
    fail({ code: typeof body.code === "string" ? body.code : "http_" + resp.status,
      message: typeof body.message === "string" ? body.message : "the card was not accepted", status: resp.status });
    return;
  }
  const card = (body.payment_method ?? {}) as Record<string, string>;
  post({ type: "vaulted", card: { scheme: card.scheme, bin: card.bin, last4: card.label, expirationDate: card.expiration_date } });
}

window.addEventListener("message", (ev: MessageEvent) => {
  if (ev.source !== window.parent || ev.origin !== parentOrigin || !isEnvelope(ev.data, channel)) return;
  const msg = ev.data as unknown as Envelope<ToField>;
  if (msg.field !== kind) return;
  switch (msg.type) {
    case "init":
      paymentMethodId = typeof msg.paymentMethodId === "string" ? msg.paymentMethodId : undefined;
      setup(msg.options);
      post({ type: "ready" });
      break;
    case "focus":
      input.focus();
      break;
    case "reset":
      digits = "";
      render();
      break;
    case "setMasked":
      masked = msg.masked === true;
      render();
      break;
    case "scheme":
      if (kind === "securityCode") {
        scheme = msg.scheme;
        render();
      }
      break;
    case "submit":
      void submit();
      break;
  }
});

label.textContent = LABELS[kind] ?? "Card field";
// Each field is its own document: its landmark and heading name it, so
// the three stay distinct to assistive technology.
document.getElementById("main")?.setAttribute("aria-label", label.textContent);
const heading = document.getElementById("heading");
if (heading) heading.textContent = `Secure ${label.textContent.toLowerCase()} field`;
input.setAttribute("autocomplete", AUTOCOMPLETE[kind] ?? "off");
input.name = AUTOCOMPLETE[kind] ?? "field";
input.placeholder = PLACEHOLDERS[kind] ?? "";
if (kind in LABELS && parentOrigin) post({ type: "loaded" });
