/* @payorch/secure-fields 2.7.1 */
"use strict";
(() => {
  // src/card.ts
  var RULES = [
    { scheme: "amex", prefixes: [[34, 34], [37, 37]], lengths: [15], codeLength: 4, gaps: [4, 10] },
    { scheme: "diners", prefixes: [[300, 305], [36, 36], [38, 39]], lengths: [14, 16, 19], codeLength: 3, gaps: [4, 10] },
    { scheme: "jcb", prefixes: [[3528, 3589]], lengths: [16, 17, 18, 19], codeLength: 3, gaps: [4, 8, 12] },
    { scheme: "discover", prefixes: [[6011, 6011], [644, 649], [65, 65]], lengths: [16, 19], codeLength: 3, gaps: [4, 8, 12] },
    { scheme: "unionpay", prefixes: [[62, 62]], lengths: [16, 17, 18, 19], codeLength: 3, gaps: [4, 8, 12] },
    { scheme: "mastercard", prefixes: [[51, 55], [2221, 2720]], lengths: [16], codeLength: 3, gaps: [4, 8, 12] },
    { scheme: "maestro", prefixes: [[50, 50], [56, 58], [63, 63], [67, 67]], lengths: [12, 13, 14, 15, 16, 17, 18, 19], codeLength: 3, gaps: [4, 8, 12] },
    { scheme: "visa", prefixes: [[4, 4]], lengths: [13, 16, 19], codeLength: 3, gaps: [4, 8, 12] }
  ];
  function digitsOf(s) {
    return s.replace(/\D+/g, "");
  }
  function ruleFor(digits2) {
    for (const r of RULES) {
      for (const [lo, hi] of r.prefixes) {
        const n = String(lo).length;
        if (digits2.length < n) continue;
        const p = Number(digits2.slice(0, n));
        if (p >= lo && p <= hi) return r;
      }
    }
    return void 0;
  }
  function luhn(digits2) {
    let sum = 0;
    for (let i = 0; i < digits2.length; i++) {
      let d = digits2.charCodeAt(digits2.length - 1 - i) - 48;
      if (i % 2 === 1) {
        d *= 2;
        if (d > 9) d -= 9;
      }
      sum += d;
    }
    return digits2.length > 0 && sum % 10 === 0;
  }
  var MAX_NUMBER_LENGTH = 19;
  function numberState(digits2) {
    const rule = ruleFor(digits2);
    const lengths = rule ? rule.lengths : [16];
    const max = Math.max(...lengths);
    const complete = lengths.includes(digits2.length) && luhn(digits2) && (digits2.length === max || rule !== void 0);
    const tooLong = digits2.length > max;
    const wrong = tooLong || digits2.length >= max && !luhn(digits2);
    return { empty: digits2.length === 0, complete, valid: complete || !wrong && digits2.length > 0, scheme: rule?.scheme ?? null };
  }
  function binOf(digits2, complete) {
    if (digits2.length < 6) return null;
    return complete && digits2.length >= 16 ? digits2.slice(0, 8) : digits2.slice(0, 6);
  }
  function formatNumber(digits2) {
    const gaps = ruleFor(digits2)?.gaps ?? [4, 8, 12];
    let out = "";
    for (let i = 0; i < digits2.length; i++) {
      if (gaps.includes(i)) out += " ";
      out += digits2[i];
    }
    return out;
  }
  function codeLengthFor(scheme2) {
    return RULES.find((r) => r.scheme === scheme2)?.codeLength ?? 3;
  }
  function expiryDigits(raw) {
    const trimmed = raw.trim();
    const m = /^(\d{1,2})\s*[/\-.]\s*(\d{2}|\d{4})$/.exec(trimmed);
    if (m) {
      const mm = m[1].padStart(2, "0");
      const yy = m[2].length === 4 ? m[2].slice(2) : m[2];
      return mm + yy;
    }
    let d = digitsOf(trimmed);
    if (d.length === 6) d = d.slice(0, 2) + d.slice(4);
    if (d.length === 1 && d > "1") d = "0" + d;
    return d.slice(0, 4);
  }
  function formatExpiry(digits2) {
    return digits2.length <= 2 ? digits2 : digits2.slice(0, 2) + "/" + digits2.slice(2);
  }
  function expiryState(digits2, now) {
    const empty = digits2.length === 0;
    if (digits2.length < 4) {
      const month2 = Number(digits2.slice(0, 2));
      const badMonth = digits2.length >= 2 && (month2 < 1 || month2 > 12);
      return { empty, complete: false, valid: !empty && !badMonth };
    }
    const month = Number(digits2.slice(0, 2));
    const year = 2e3 + Number(digits2.slice(2, 4));
    const thisMonth = now.getFullYear() * 12 + now.getMonth();
    const valid = month >= 1 && month <= 12 && year * 12 + (month - 1) >= thisMonth && year <= now.getFullYear() + 20;
    return { empty, complete: valid, valid };
  }
  function codeState(digits2, scheme2) {
    const want = codeLengthFor(scheme2);
    const empty = digits2.length === 0;
    const complete = digits2.length === want || scheme2 === null && digits2.length === 4;
    return { empty, complete, valid: complete || !empty && digits2.length < want };
  }

  // src/messages.ts
  var TAG = "payorch-secure-fields";
  function isEnvelope(data, channel2) {
    if (typeof data !== "object" || data === null) return false;
    const d = data;
    return d.tag === TAG && d.channel === channel2 && typeof d.type === "string";
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
    for (const state2 of ["base", "focus", "invalid", "complete", "placeholder"]) {
      const d = s[state2];
      if (d !== void 0) out[state2] = sanitizeDecl(d, rejected);
    }
    return out;
  }

  // src/field.ts
  var MASK = "•";
  var LABELS = { number: "Card number", expiryDate: "Expiry date (MM/YY)", securityCode: "Security code" };
  var PLACEHOLDERS = { number: "1234 1234 1234 1234", expiryDate: "MM/YY", securityCode: "CVC" };
  var AUTOCOMPLETE = { number: "cc-number", expiryDate: "cc-exp", securityCode: "cc-csc" };
  var ICONS = /* @__PURE__ */ new Set(["visa", "mastercard", "amex", "discover", "diners", "jcb", "unionpay", "maestro"]);
  var params = new URLSearchParams(location.search);
  var session = params.get("session") ?? "";
  var channel = params.get("channel") ?? "";
  var parentOrigin = params.get("origin") ?? "";
  var kind = params.get("field");
  var digits = "";
  var options = {};
  var styles = {};
  var masked = false;
  var focused = false;
  var scheme = null;
  var paymentMethodId;
  var lastMeta = "";
  var wasComplete = false;
  var applied = [];
  var input = document.getElementById("field");
  var label = document.getElementById("label");
  var icon = null;
  function post(msg) {
    const env = { ...msg, tag: TAG, channel, field: kind };
    window.parent.postMessage(env, parentOrigin);
  }
  function maxDigits() {
    switch (kind) {
      case "number":
        return MAX_NUMBER_LENGTH;
      case "expiryDate":
        return 4;
      default:
        return 4;
    }
  }
  function parse(raw) {
    if (kind === "expiryDate") return expiryDigits(raw);
    return digitsOf(raw).slice(0, maxDigits());
  }
  function state() {
    switch (kind) {
      case "number":
        return numberState(digits);
      case "expiryDate":
        return expiryState(digits, /* @__PURE__ */ new Date());
      default:
        return codeState(digits, scheme);
    }
  }
  function display() {
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
  function render() {
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
  function report(st) {
    const meta = { empty: st.empty, complete: st.complete, valid: st.valid };
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
  function applyStyles(st) {
    for (const p of applied) input.style.removeProperty(p);
    applied = [];
    const decls = [
      styles.base,
      focused ? styles.focus : void 0,
      !st.empty && !st.valid ? styles.invalid : void 0,
      st.complete ? styles.complete : void 0
    ];
    for (const d of decls) {
      for (const [p, v] of Object.entries(d ?? {})) {
        input.style.setProperty(p, v);
        applied.push(p);
      }
    }
  }
  function applyPlaceholderStyles() {
    for (const [p, v] of Object.entries(styles.placeholder ?? {})) document.documentElement.style.setProperty(`--sf-placeholder-${p}`, v);
  }
  input.addEventListener("input", () => {
    if (masked && input.value.includes(MASK)) {
      render();
      return;
    }
    digits = parse(input.value);
    render();
  });
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
  function setup(o) {
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
  var siblings = new BroadcastChannel(`${TAG}:${channel}`);
  siblings.onmessage = (ev) => {
    const m = ev.data;
    if (m?.type !== "collect" || typeof m.id !== "string") return;
    const value = kind === "expiryDate" ? formatExpiry(digits) : digits;
    siblings.postMessage({ type: "value", id: m.id, field: kind, value, complete: state().complete });
  };
  function collect() {
    const id = crypto.randomUUID();
    const got = /* @__PURE__ */ new Map();
    got.set(kind, { value: kind === "expiryDate" ? formatExpiry(digits) : digits, complete: state().complete });
    return new Promise((resolve) => {
      const ch = new BroadcastChannel(`${TAG}:${channel}`);
      const done = () => {
        ch.close();
        resolve(got);
      };
      ch.onmessage = (ev) => {
        const m = ev.data;
        if (m?.type === "value" && m.id === id) {
          got.set(m.field, { value: String(m.value), complete: m.complete === true });
          if (got.size === 3 || paymentMethodId && got.size >= 1) done();
        }
      };
      ch.postMessage({ type: "collect", id });
      setTimeout(done, 1e3);
    });
  }
  async function submit() {
    const values = await collect();
    const fail = (error) => post({ type: "failed", error });
    const need = paymentMethodId ? ["securityCode"] : ["number", "expiryDate"];
    const code = values.get("securityCode");
    const incomplete = need.filter((k) => !values.get(k)?.complete);
    if (code && code.value !== "" && !code.complete) incomplete.push("securityCode");
    if (incomplete.length > 0) {
      fail({ code: "invalid_fields", message: `complete these fields first: ${incomplete.join(", ")}` });
      return;
    }
    const pm = paymentMethodId ? { method: "id", id: paymentMethodId, security_code: code?.value ?? "" } : { method: "card", number: values.get("number")?.value ?? "", expiration_date: values.get("expiryDate")?.value ?? "" };
    if (!paymentMethodId && code?.value) pm.security_code = code.value;
    let resp;
    try {
      resp = await fetch(`/checkout/sessions/${encodeURIComponent(session)}/fields`, {
        method: "PUT",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ payment_method: pm }),
        credentials: "omit",
        cache: "no-store",
        referrerPolicy: "no-referrer"
      });
    } catch {
      fail({ code: "network_error", message: "the card could not be sent; check the connection and try again" });
      return;
    }
    let body = {};
    try {
      body = await resp.json();
    } catch {
    }
    if (!resp.ok) {
      fail({
        code: typeof body.code === "string" ? body.code : "http_" + resp.status,
        message: typeof body.message === "string" ? body.message : "the card was not accepted",
        status: resp.status
      });
      return;
    }
    const card = body.payment_method ?? {};
    post({ type: "vaulted", card: { scheme: card.scheme, bin: card.bin, last4: card.label, expirationDate: card.expiration_date } });
  }
  window.addEventListener("message", (ev) => {
    if (ev.source !== window.parent || ev.origin !== parentOrigin || !isEnvelope(ev.data, channel)) return;
    const msg = ev.data;
    if (msg.field !== kind) return;
    switch (msg.type) {
      case "init":
        paymentMethodId = typeof msg.paymentMethodId === "string" ? msg.paymentMethodId : void 0;
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
  document.getElementById("main")?.setAttribute("aria-label", label.textContent);
  var heading = document.getElementById("heading");
  if (heading) heading.textContent = `Secure ${label.textContent.toLowerCase()} field`;
  input.setAttribute("autocomplete", AUTOCOMPLETE[kind] ?? "off");
  input.name = AUTOCOMPLETE[kind] ?? "field";
  input.placeholder = PLACEHOLDERS[kind] ?? "";
  if (kind in LABELS && parentOrigin) post({ type: "loaded" });
})();
