/* @payorch/secure-fields 2.7.1 */
"use strict";
(() => {
  var __defProp = Object.defineProperty;
  var __defNormalProp = (obj, key, value) => key in obj ? __defProp(obj, key, { enumerable: true, configurable: true, writable: true, value }) : obj[key] = value;
  var __publicField = (obj, key, value) => __defNormalProp(obj, typeof key !== "symbol" ? key + "" : key, value);

  // src/messages.ts
  var VERSION = "2.7.1";
  var TAG = "payorch-secure-fields";
  function isEnvelope(data, channel) {
    if (typeof data !== "object" || data === null) return false;
    const d = data;
    return d.tag === TAG && d.channel === channel && typeof d.type === "string";
  }

  // src/styles.ts
  var ALLOWED_PROPERTIES = /* @__PURE__ */ new Set([
    "color",
    "background-color",
    "caret-color",
    "font-family",
    "font-size",
    "font-style",
    "font-variant",
    "font-weight",
    "letter-spacing",
    "line-height",
    "padding",
    "padding-top",
    "padding-right",
    "padding-bottom",
    "padding-left",
    "text-align",
    "text-decoration",
    "text-shadow",
    "text-transform",
    "opacity"
  ]);
  var SAFE_FONTS = /* @__PURE__ */ new Set([
    "system-ui",
    "-apple-system",
    "blinkmacsystemfont",
    "segoe ui",
    "roboto",
    "helvetica neue",
    "helvetica",
    "arial",
    "verdana",
    "tahoma",
    "trebuchet ms",
    "georgia",
    "times new roman",
    "times",
    "courier new",
    "courier",
    "sans-serif",
    "serif",
    "monospace",
    "ui-sans-serif",
    "ui-serif",
    "ui-monospace"
  ]);
  var BAD_VALUE = /url\s*\(|expression\s*\(|image\s*\(|image-set|element\s*\(|javascript:|[\\;{}<>@]|\/\*|!important/i;
  function kebab(k) {
    return k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
  }
  function safeFontFamily(v) {
    return v.split(",").every((f) => SAFE_FONTS.has(f.trim().replace(/^["']|["']$/g, "").toLowerCase()));
  }
  function sanitizeDecl(d, rejected = []) {
    const out = {};
    if (typeof d !== "object" || d === null) return out;
    for (const [k, v] of Object.entries(d)) {
      const prop = kebab(k);
      if (!ALLOWED_PROPERTIES.has(prop) || typeof v !== "string" || v.length > 200 || BAD_VALUE.test(v) || prop === "font-family" && !safeFontFamily(v)) {
        rejected.push(k);
        continue;
      }
      out[prop] = v;
    }
    return out;
  }
  function sanitizeStyles(s, rejected = []) {
    const out = {};
    if (typeof s !== "object" || s === null) return out;
    for (const state of ["base", "focus", "invalid", "complete", "placeholder"]) {
      const d = s[state];
      if (d !== void 0) out[state] = sanitizeDecl(d, rejected);
    }
    return out;
  }

  // src/loader.ts
  var Events = {
    READY: "READY",
    FORM_CHANGE: "FORM_CHANGE",
    CARD_VAULT_SUCCESS: "CARD_VAULT_SUCCESS",
    CARD_VAULT_FAILURE: "CARD_VAULT_FAILURE"
  };
  var FIELD_LOAD_TIMEOUT_MS = 3e3;
  var TITLES = {
    number: "Secure card number field",
    expiryDate: "Secure expiry date field",
    securityCode: "Secure security code field"
  };
  function scriptOrigin() {
    const s = document.currentScript;
    try {
      return s?.src ? new URL(s.src).origin : void 0;
    } catch {
      return void 0;
    }
  }
  var LOADED_FROM = typeof document !== "undefined" ? scriptOrigin() : void 0;
  function randomId() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }
  var SecureField = class {
    constructor(form, kind, iframe, options) {
      __publicField(this, "form", form);
      __publicField(this, "options", options);
      __publicField(this, "kind");
      __publicField(this, "iframe");
      __publicField(this, "meta", { empty: true, complete: false, valid: false });
      __publicField(this, "ready", false);
      __publicField(this, "loaded", false);
      __publicField(this, "queue", []);
      this.kind = kind;
      this.iframe = iframe;
    }
    /** Mask the field's characters or show them again; its value never reaches this page (2.7.1). */
    setMasked(masked) {
      this.send({ type: "setMasked", masked: masked === true });
    }
    /** Clear the field; FORM_CHANGE then reports it empty and incomplete (2.7.1). */
    reset() {
      this.send({ type: "reset" });
    }
    focus() {
      this.iframe.focus();
      this.send({ type: "focus" });
    }
    /** @internal */
    send(msg) {
      if (!this.loaded && msg.type !== "init") {
        this.queue.push(msg);
        return;
      }
      this.form.post(this, msg);
    }
    get isLoaded() {
      return this.loaded;
    }
    /** @internal */
    onLoaded() {
      this.loaded = true;
      for (const m of this.queue.splice(0)) this.form.post(this, m);
    }
  };
  var SecureFields = class {
    constructor(options) {
      __publicField(this, "options", options);
      __publicField(this, "version", VERSION);
      __publicField(this, "origin");
      __publicField(this, "channel", randomId());
      __publicField(this, "fields", []);
      __publicField(this, "handlers", /* @__PURE__ */ new Map());
      __publicField(this, "readyEmitted", false);
      __publicField(this, "onMessage", (ev) => {
        if (ev.origin !== this.origin || !isEnvelope(ev.data, this.channel)) return;
        const field = this.fields.find((f) => f.iframe.contentWindow === ev.source);
        if (!field || ev.data.field !== field.kind) return;
        const msg = ev.data;
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
      });
      if (!options || typeof options.sessionId !== "string" || !/^[0-9a-f-]{36}$/i.test(options.sessionId)) {
        throw new TypeError("SecureFields: sessionId must be a checkout session id");
      }
      const origin = options.vaultOrigin ?? LOADED_FROM;
      if (!origin) throw new TypeError("SecureFields: load the script from vault-proxy or give vaultOrigin");
      this.origin = new URL(origin).origin;
      window.addEventListener("message", this.onMessage);
    }
    on(event, handler) {
      let set = this.handlers.get(event);
      if (!set) this.handlers.set(event, set = /* @__PURE__ */ new Set());
      set.add(handler);
      return this;
    }
    off(event, handler) {
      this.handlers.get(event)?.delete(handler);
      return this;
    }
    /** addEventListener is on, for those who prefer the DOM's name. */
    addEventListener(event, handler) {
      return this.on(event, handler);
    }
    addCardNumberField(selector, options = {}) {
      return this.add("number", selector, options);
    }
    addExpiryDateField(selector, options = {}) {
      return this.add("expiryDate", selector, options);
    }
    addSecurityCodeField(selector, options = {}) {
      return this.add("securityCode", selector, options);
    }
    /** Send the card to vault-proxy; CARD_VAULT_SUCCESS or CARD_VAULT_FAILURE tells how it went. */
    submit() {
      const controller = this.controller();
      if (!controller) {
        this.emit(Events.CARD_VAULT_FAILURE, { code: "missing_fields", message: "add a card number field (or a security code field with paymentMethodId) first" });
        return;
      }
      controller.send({ type: "submit" });
    }
    /** Clear every field (2.7.1). */
    reset() {
      for (const f of this.fields) f.reset();
    }
    /** Remove the fields and stop listening. */
    destroy() {
      window.removeEventListener("message", this.onMessage);
      for (const f of this.fields) f.iframe.remove();
      this.fields.length = 0;
    }
    controller() {
      const want = this.options.paymentMethodId ? "securityCode" : "number";
      return this.fields.find((f) => f.kind === want);
    }
    add(kind, selector, options) {
      const host = typeof selector === "string" ? document.querySelector(selector) : selector;
      if (!host) throw new Error(`SecureFields: no element matches ${String(selector)}`);
      if (this.fields.some((f) => f.kind === kind)) throw new Error(`SecureFields: the ${kind} field is added already`);
      const rejected = [];
      const styles = sanitizeStyles(mergeStyles(this.options.styles, options.styles), rejected);
      if (rejected.length > 0) console.warn(`SecureFields: styles not allowed and ignored: ${rejected.join(", ")}`);
      const clean = {
        placeholder: typeof options.placeholder === "string" ? options.placeholder.slice(0, 64) : void 0,
        styles,
        autoFocus: options.autoFocus === true,
        masked: options.masked === true,
        showLastFour: options.showLastFour === true,
        schemeIcon: options.schemeIcon === true
      };
      const iframe = document.createElement("iframe");
      const q = new URLSearchParams({ session: this.options.sessionId, field: kind, channel: this.channel, origin: window.location.origin });
      iframe.src = `${this.origin}/securefields/field.html?${q.toString()}`;
      iframe.title = typeof options.title === "string" && options.title ? options.title : TITLES[kind];
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
      iframe.addEventListener("load", () => {
        setTimeout(() => {
          if (!field.isLoaded && this.fields.includes(field)) {
            this.emit(Events.CARD_VAULT_FAILURE, {
              code: "fields_unavailable",
              message: "the secure fields could not be shown: the checkout session is unknown, or this page's origin is not allowed for it"
            });
          }
        }, FIELD_LOAD_TIMEOUT_MS);
      }, { once: true });
      host.appendChild(iframe);
      return field;
    }
    /** @internal */
    post(field, msg) {
      const env = { ...msg, tag: TAG, channel: this.channel, field: field.kind };
      field.iframe.contentWindow?.postMessage(env, this.origin);
    }
    advance(from) {
      const i = this.fields.indexOf(from);
      const next = this.fields[i + 1];
      if (next) next.focus();
    }
    formState() {
      const fields = {};
      for (const f of this.fields) fields[f.kind] = { ...f.meta };
      const n = this.fields.find((f) => f.kind === "number")?.meta;
      return {
        complete: this.fields.length > 0 && this.fields.every((f) => f.meta.complete && f.meta.valid),
        fields,
        scheme: n?.scheme ?? null,
        bin: n?.bin ?? null,
        last4: n?.last4 ?? null
      };
    }
    emit(event, detail) {
      for (const h of this.handlers.get(event) ?? []) {
        try {
          h(detail);
        } catch (e) {
          console.error(e);
        }
      }
    }
  };
  __publicField(SecureFields, "Events", Events);
  __publicField(SecureFields, "version", VERSION);
  function mergeStyles(a, b) {
    const out = {};
    for (const k of ["base", "focus", "invalid", "complete", "placeholder"]) {
      if (a?.[k] || b?.[k]) out[k] = { ...a?.[k] ?? {}, ...b?.[k] ?? {} };
    }
    return out;
  }
  function digitsUpTo(v, max) {
    return typeof v === "string" && /^\d+$/.test(v) && v.length <= max ? v : null;
  }
  function sanitizeMeta(m) {
    const out = { empty: m?.empty === true, complete: m?.complete === true, valid: m?.valid === true };
    if (m && "scheme" in m) {
      out.scheme = typeof m.scheme === "string" && /^[a-z]{2,16}$/.test(m.scheme) ? m.scheme : null;
      out.bin = digitsUpTo(m.bin, 8);
      out.last4 = digitsUpTo(m.last4, 4);
    }
    return out;
  }
  function sanitizeCard(c) {
    return {
      scheme: typeof c?.scheme === "string" ? c.scheme.slice(0, 16) : void 0,
      bin: digitsUpTo(c?.bin, 8) ?? void 0,
      last4: digitsUpTo(c?.last4, 4) ?? void 0,
      expirationDate: typeof c?.expirationDate === "string" && /^\d{2}\/\d{2}$/.test(c.expirationDate) ? c.expirationDate : void 0
    };
  }
  function sanitizeFailure(e) {
    return {
      code: typeof e?.code === "string" ? e.code.slice(0, 64) : "unknown",
      message: typeof e?.message === "string" ? e.message.slice(0, 300) : "",
      status: typeof e?.status === "number" ? e.status : void 0
    };
  }
  if (typeof window !== "undefined") window.SecureFields = SecureFields;
})();
