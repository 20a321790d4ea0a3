// The merchant-side loader: puts one iframe per card field, served by
// vault-proxy, into the merchant's page, and turns the fields' metadata
// messages into events. The card number and security code stay inside the
// iframes (vault-proxy's origin); nothing here ever holds them.

import type { Scheme } from "./card";
import {
  TAG, VERSION, isEnvelope,
  type Envelope, type FieldKind, type FieldMeta, type FieldOptions, type FromField, type ToField,
  type VaultFailure, type VaultedCard,
} from "./messages";
import { sanitizeStyles, type Styles } from "./styles";

export const Events = {
  READY: "READY",
  FORM_CHANGE: "FORM_CHANGE",
  CARD_VAULT_SUCCESS: "CARD_VAULT_SUCCESS",
  CARD_VAULT_FAILURE: "CARD_VAULT_FAILURE",
} as const;
export type EventName = (typeof Events)[keyof typeof Events];

export interface SecureFieldsOptions {
  /** "sandbox" or "production": informational; the fields' host is where this script was loaded from. */
  environment?: string;
  /** The checkout session the merchant's server created. */
  sessionId: string;
  /** vault-proxy's origin, when the loader is bundled rather than loaded from vault-proxy. */
  vaultOrigin?: string;
  /** Pay with a stored card: only the security code field is shown. */
  paymentMethodId?: string;
  /** Styles every field starts from; a field's own override them. */
  styles?: Styles;
  /** Move focus number → expiry → code as each becomes complete, in the order added (2.7.1; off by default). */
  autoAdvance?: boolean;
}

export interface FormChange {
  complete: boolean;
  fields: Partial<Record<FieldKind, FieldMeta>>;
  scheme: Scheme | null;
  bin: string | null;
  last4: string | null;
}

type Handler = (detail: unknown) => void;

/** How long a loaded field page may take to say it is there. */
const FIELD_LOAD_TIMEOUT_MS = 3000;

const TITLES: Record<FieldKind, string> = {
  number: "Secure card number field",
  expiryDate: "Secure expiry date field",
  securityCode: "Secure security code field",
};

function scriptOrigin(): string | undefined {
  const s = document.currentScript as HTMLScriptElement | null;
  try {
    return s?.src ? new URL(s.src).origin : undefined;
  } catch {
    return undefined;
  }
}

// Read while the script runs: document.currentScript is null later.
const LOADED_FROM = typeof document !== "undefined" ? scriptOrigin() : undefined;

function randomId(): string {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** One secure field in the merchant's page: its iframe and what it may be asked to do. */
export class SecureField {
  readonly kind: FieldKind;
  readonly iframe: HTMLIFrameElement;
  meta: FieldMeta = { empty: true, complete: false, valid: false };
  ready = false;
  private loaded = false;
  private queue: ToField[] = [];

  constructor(private readonly form: SecureFields, kind: FieldKind, iframe: HTMLIFrameElement, readonly options: FieldOptions) {
    this.kind = kind;
    this.iframe = iframe;
  }

  /** Mask the field's characters or show them again; its value never reaches this page (2.7.1). */
  setMasked(masked: boolean): void {
    this.send({ type: "setMasked", masked: masked === true });
  }

  /** Clear the field; FORM_CHANGE then reports it empty and incomplete (2.7.1). */
  reset(): void {
    this.send({ type: "reset" });
  }

  focus(): void {
    this.iframe.focus();
    this.send({ type: "focus" });
  }

  /** @internal */
  send(msg: ToField): void {
    if (!this.loaded && msg.type !== "init") {
      this.queue.push(msg);
      return;
    }
    this.form.post(this, msg);
  }

  get isLoaded(): boolean {
    return this.loaded;
  }

  /** @internal */
  onLoaded(): void {
    this.loaded = true;
    for (const m of this.queue.splice(0)) this.form.post(this, m);
  }
}

export class SecureFields {
  static readonly Events = Events;
  static readonly version = VERSION;

  readonly version = VERSION;
  private readonly origin: string;
  private readonly channel = randomId();
  private readonly fields: SecureField[] = [];
  private readonly handlers = new Map<string, Set<Handler>>();
  private readyEmitted = false;

  constructor(private readonly options: SecureFieldsOptions) {
    if (!options || typeof options.sessionId !== "string" || !/^[0-9a-f-]{36}$/i.test(options.sessionId)) {
      throw new TypeError("SecureFields: sessionId must be a checkout session id");
    }
    const origin = options.vaultOrigin ?? LOADED_FROM;
    if (!origin) throw new TypeError("SecureFields: load the script from vault-proxy or give vaultOrigin");
    this.origin = new URL(origin).origin;
    window.addEventListener("message", this.onMessage);
  }

  on(event: EventName, handler: Handler): this {
    let set = this.handlers.get(event);
    if (!set) this.handlers.set(event, (set = new Set()));
    set.add(handler);
    return this;
  }

  off(event: EventName, handler: Handler): this {
    this.handlers.get(event)?.delete(handler);
    return this;
  }

  /** addEventListener is on, for those who prefer the DOM's name. */
  addEventListener(event: EventName, handler: Handler): this {
    return this.on(event, handler);
  }

  addCardNumberField(selector: string | Element, options: FieldOptions = {}): SecureField {
    return this.add("number", selector, options);
  }

  addExpiryDateField(selector: string | Element, options: FieldOptions = {}): SecureField {
    return this.add("expiryDate", selector, options);
  }

  addSecurityCodeField(selector: string | Element, options: FieldOptions = {}): SecureField {
    return this.add("securityCode", selector, options);
  }

  /** Send the card to vault-proxy; CARD_VAULT_SUCCESS or CARD_VAULT_FAILURE tells how it went. */
  submit(): void {
    const controller = this.controller();
    if (!controller) {
      this.emit(Events.CARD_VAULT_FAILURE, { code: "missing_fields", message: "add a card number field (or a security code field with paymentMethodId) first" });
      return;
    }
    controller.send({ type: "submit" });
  }

  /** Clear every field (2.7.1). */
  reset(): void {
    for (const f of this.fields) f.reset();
  }

  /** Remove the fields and stop listening. */
  destroy(): void {
    window.removeEventListener("message", this.onMessage);
    for (const f of this.fields) f.iframe.remove();
    this.fields.length = 0;
  }

  private controller(): SecureField | undefined {
    const want: FieldKind = this.options.paymentMethodId ? "securityCode" : "number";
    return this.fields.find((f) => f.kind === want);
  }

  private add(kind: FieldKind, selector: string | Element, options: FieldOptions): SecureField {
    const host = typeof selector === "string" ? document.querySelector(selector) : selector;
    if (!host) throw new Error(`SecureFields: no element matches ${String(selector)}`);
    if (this.fields.some((f) => f.kind === kind)) throw new Error(`SecureFields: the ${kind} field is added already`);
    const rejected: string[] = [];
    const styles = sanitizeStyles(mergeStyles(this.options.styles, options.styles), rejected);
    if (rejected.length > 0) console.warn(`SecureFields: styles not allowed and ignored: ${rejected.join(", ")}`);
    const clean: FieldOptions = {
      placeholder: typeof options.placeholder === "string" ? options.placeholder.slice(0, 64) : undefined,
      styles,
      autoFocus: options.autoFocus === true,
      masked: options.masked === true,
      showLastFour: options.showLastFour === true,
      schemeIcon: options.schemeIcon === true,
    };
    const iframe = document.createElement("iframe");
    const q = new URLSearchParams({ session: this.options.sessionId, field: kind, channel: this.channel, origin: window.location.origin });
    iframe.src = `${this.origin}/securefields/field.html?${q.toString()}`;
    iframe.title = typeof options.title === "string" && options.title ? options.title : TITLES[kind];
    // Scripts and the fields' own origin (their API, their siblings); no
    // top navigation, popups, forms or downloads.
    iframe.setAttribute("sandbox", "allow-scripts allow-same-origin");
    iframe.setAttribute("allow", "");
    iframe.setAttribute("referrerpolicy", "no-referrer");
    iframe.setAttribute("scrolling", "no");
    iframe.setAttribute("frameborder", "0");
    iframe.dataset.secureField = kind;
    iframe.style.border = "0";
    iframe.style.width = "100%";
    iframe.style.height = "100%";
    iframe.style.display = "block";
    const field = new SecureField(this, kind, iframe, clean);
    this.fields.push(field);
    // A field page vault-proxy refused (an unknown session, or this page's
    // origin not allowed for the session's merchant account) loads but
    // never speaks: the page is told rather than left waiting for READY.
    iframe.addEventListener("load", () => {
      setTimeout(() => {
        if (!field.isLoaded && this.fields.includes(field)) {
          this.emit(Events.CARD_VAULT_FAILURE, { code: "fields_unavailable",
            message: "the secure fields could not be shown: the checkout session is unknown, or this page's origin is not allowed for it" });
        }
      }, FIELD_LOAD_TIMEOUT_MS);
    }, { once: true });
    host.appendChild(iframe);
    return field;
  }

  /** @internal */
  post(field: SecureField, msg: ToField): void {
    const env: Envelope<ToField> = { ...msg, tag: TAG, channel: this.channel, field: field.kind };
    field.iframe.contentWindow?.postMessage(env, this.origin);
  }

  private readonly onMessage = (ev: MessageEvent): void => {
    if (ev.origin !== this.origin || !isEnvelope(ev.data, this.channel)) return;
    const field = this.fields.find((f) => f.iframe.contentWindow === ev.source);
    if (!field || ev.data.field !== field.kind) return;
    const msg = ev.data as unknown as Envelope<FromField>;
    switch (msg.type) {
      case "loaded":
        field.send({ type: "init", options: field.options, paymentMethodId: this.options.paymentMethodId });
        field.onLoaded();
        break;
      case "ready":
        field.ready = true;
        if (field.options.autoFocus) field.focus();
        if (!this.readyEmitted && this.fields.every((f) => f.ready)) {
          this.readyEmitted = true;
          this.emit(Events.READY, { fields: this.fields.map((f) => f.kind) });
        }
        break;
      case "change":
        field.meta = sanitizeMeta(msg.meta);
        if (field.kind === "number") {
          for (const f of this.fields) if (f.kind === "securityCode") f.send({ type: "scheme", scheme: field.meta.scheme ?? null });
        }
        this.emit(Events.FORM_CHANGE, this.formState());
        break;
      case "complete":
        if (this.options.autoAdvance === true) this.advance(field);
        break;
      case "vaulted":
        this.emit(Events.CARD_VAULT_SUCCESS, sanitizeCard(msg.card));
        break;
      case "failed":
        this.emit(Events.CARD_VAULT_FAILURE, sanitizeFailure(msg.error));
        break;
    }
  };

  private advance(from: SecureField): void {
    const i = this.fields.indexOf(from);
    const next = this.fields[i + 1];
    if (next) next.focus();
  }

  private formState(): FormChange {
    const fields: FormChange["fields"] = {};
    for (const f of this.fields) fields[f.kind] = { ...f.meta };
    const n = this.fields.find((f) => f.kind === "number")?.meta;
    return {
      complete: this.fields.length > 0 && this.fields.every((f) => f.meta.complete && f.meta.valid),
      fields,
      scheme: n?.scheme ?? null,
      bin: n?.bin ?? null,
      last4: n?.last4 ?? null,
    };
  }

  private emit(event: EventName, detail: unknown): void {
    for (const h of this.handlers.get(event) ?? []) {
      try {
        h(detail);
      } catch (e) {
        console.error(e);
      }
    }
  }
}

function mergeStyles(a: Styles | undefined, b: Styles | undefined): Styles {
  const out: Styles = {};
  for (const k of ["base", "focus", "invalid", "complete", "placeholder"] as const) {
    if (a?.[k] || b?.[k]) out[k] = { ...(a?.[k] ?? {}), ...(b?.[k] ?? {}) };
  }
  return out;
}

// The fields are vault-proxy's code, but the page keeps only the shapes it
// documents: a digit string longer than a BIN never passes.
function digitsUpTo(v: unknown, max: number): string | null {
  return typeof v === "string" && /^\d+$/.test(v) && v.length <= max ? v : null;
}

function sanitizeMeta(m: FieldMeta): FieldMeta {
  const out: FieldMeta = { empty: m?.empty === true, complete: m?.complete === true, valid: m?.valid === true };
  if (m && "scheme" in m) {
    out.scheme = typeof m.scheme === "string" && /^[a-z]{2,16}$/.test(m.scheme) ? m.scheme : null;
    out.bin = digitsUpTo(m.bin, 8);
    out.last4 = digitsUpTo(m.last4, 4);
  }
  return out;
}

function sanitizeCard(c: VaultedCard): VaultedCard {
  return {
    scheme: typeof c?.scheme === "string" ? c.scheme.slice(0, 16) : undefined,
    bin: digitsUpTo(c?.bin, 8) ?? undefined,
    last4: digitsUpTo(c?.last4, 4) ?? undefined,
    expirationDate: typeof c?.expirationDate === "string" && /^\d{2}\/\d{2}$/.test(c.expirationDate) ? c.expirationDate : undefined,
  };
}

function sanitizeFailure(e: VaultFailure): VaultFailure {
  return {
    code: typeof e?.code === "string" ? e.code.slice(0, 64) : "unknown",
    message: typeof e?.message === "string" ? e.message.slice(0, 300) : "",
    status: typeof e?.status === "number" ? e.status : undefined,
  };
}

declare global {
  interface Window {
    SecureFields: typeof SecureFields;
  }
}

if (typeof window !== "undefined") window.SecureFields = SecureFields;
