// @ts-check
// The secure card fields in Debian's chromium, driven by playwright-core.
// Run by e2e's TestSecureFieldsInABrowser, which starts the product and the
// merchant's site (MERCHANT_URL, http://localhost:<port>) and gives the
// fields' host (VAULT_URL, https://127.0.0.1:<port>): two origins.
import { test, before, after, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import AxeBuilder from "@axe-core/playwright";

const MERCHANT = process.env.MERCHANT_URL ?? "";
const FOREIGN = process.env.FOREIGN_URL ?? "";
const VAULT = process.env.VAULT_URL ?? "";
const PAN = "4111111111111111";
const CODE = "837";
const skip = !MERCHANT || !VAULT ? "run by e2e's TestSecureFieldsInABrowser (go test ./e2e -run SecureFields)" : false;

/** @type {import("playwright-core").Browser} */
let browser;
/** @type {import("playwright-core").BrowserContext} */
let context;
/** @type {import("playwright-core").Page} */
let page;
/** What the merchant's page did: its console, and every request its own frame made. */
let consoleLines = [];
let pageRequests = [];

before(async () => {
  if (skip) return;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      // playwright-core gives each launch a fresh profile directory of its own.
      "--disable-component-update", "--disable-sync",
      // vault-proxy's TLS certificate is from the stack's own dev CA.
      "--ignore-certificate-errors"],
  });
});

after(async () => {
  await browser?.close();
});

beforeEach(async () => {
  if (skip) return;
  context = await browser.newContext({ ignoreHTTPSErrors: true });
  page = await context.newPage();
  consoleLines = [];
  pageRequests = [];
  page.on("console", (m) => consoleLines.push(m.text()));
  page.on("pageerror", (e) => consoleLines.push("pageerror: " + e.message));
  page.on("request", (r) => {
    if (r.frame() === page.mainFrame()) pageRequests.push(`${r.method()} ${r.url()} ${r.postData() ?? ""}`);
  });
});

afterEach(async () => {
  await context?.close();
});

/** Opens the merchant's page and mounts the three fields; resolves with the session id on READY. */
async function mount({ form = {}, number = {}, expiry = {}, code = {}, session = "", path = "/checkout.html", order = ["number", "expiry", "code"] } = {}) {
  await page.goto(MERCHANT + path);
  return page.evaluate(async ({ form, number, expiry, code, session, order }) => {
    if (!session) {
      const r = await fetch("/server/session", { method: "POST" });
      session = (await r.json()).id;
    }
    const w = /** @type {any} */ (window);
    w.events = [];
    const sf = new w.SecureFields({ environment: "sandbox", sessionId: session, ...form });
    w.sf = sf;
    for (const ev of Object.values(w.SecureFields.Events)) sf.on(ev, (/** @type {any} */ d) => w.events.push({ type: ev, detail: d }));
    const ready = new Promise((resolve, reject) => {
      sf.on("READY", resolve);
      setTimeout(() => reject(new Error("no READY in 15s")), 15000);
    });
    w.fields = {};
    for (const f of order) {
      if (f === "number") w.fields.number = sf.addCardNumberField("#card-number", number);
      if (f === "expiry") w.fields.expiry = sf.addExpiryDateField("#expiry-date", expiry);
      if (f === "code") w.fields.code = sf.addSecurityCodeField("#security-code", code);
    }
    await ready;
    return session;
  }, { form, number, expiry, code, session, order });
}

const frameOf = (/** @type {string} */ kind) => page.frameLocator(`iframe[data-secure-field="${kind}"]`);
const inputOf = (/** @type {string} */ kind) => frameOf(kind).locator("input");
/** The field iframe's Frame, to evaluate in. */
async function frame(/** @type {string} */ kind) {
  const el = await page.waitForSelector(`iframe[data-secure-field="${kind}"]`);
  const f = await el.contentFrame();
  assert.ok(f);
  return f;
}

async function typeCard(pan = PAN, exp = "12/34", code = CODE) {
  await inputOf("number").pressSequentially(pan);
  await inputOf("expiryDate").pressSequentially(exp.replace("/", ""));
  await inputOf("securityCode").pressSequentially(code);
}

/** Waits for an event of type from the loader and returns its detail (the last one). */
async function event(/** @type {string} */ type, from = 0) {
  await page.waitForFunction(([t, n]) => /** @type {any} */ (window).events.slice(n).some((/** @type {any} */ e) => e.type === t), [type, from], { timeout: 15000 });
  return page.evaluate(([t]) => /** @type {any} */ (window).events.filter((/** @type {any} */ e) => e.type === t).at(-1).detail, [type]);
}

const eventCount = () => page.evaluate(() => /** @type {any} */ (window).events.length);
/** Waits until the last FORM_CHANGE says complete is want: the fields' messages arrive after the keys. */
async function untilComplete(want = true) {
  await page.waitForFunction((w) => /** @type {any} */ (window).events.filter((/** @type {any} */ e) => e.type === "FORM_CHANGE").at(-1)?.detail?.complete === w, want, { timeout: 15000 });
}
const lastChange = () => page.evaluate(() => /** @type {any} */ (window).events.filter((/** @type {any} */ e) => e.type === "FORM_CHANGE").at(-1)?.detail);

/** Which secure field's iframe has the page's focus ("" for none), and whether its input has the frame's. */
async function focused() {
  const kind = await page.evaluate(() => /** @type {HTMLElement|null} */ (document.activeElement)?.dataset?.secureField ?? "");
  if (!kind) return "";
  const f = await frame(kind);
  const inInput = await f.evaluate(() => document.activeElement?.id === "field");
  return inInput ? kind : kind + "(frame only)";
}

/** No card number or security code in what the merchant's page saw. */
async function assertNothingLeaked(pans = [PAN], codes = [CODE]) {
  const dom = await page.evaluate(() => document.documentElement.outerHTML);
  const messages = await page.evaluate(() => /** @type {any} */ (window).seenMessages.map((/** @type {any} */ m) => m.data));
  const events = await page.evaluate(() => JSON.stringify(/** @type {any} */ (window).events));
  const places = { dom, events, console: consoleLines.join("\n"), requests: pageRequests.join("\n"), messages: messages.join("\n") };
  for (const [where, text] of Object.entries(places)) {
    for (const pan of pans) {
      assert.ok(!text.replace(/\D/g, "").includes(pan), `the card number is in the page's ${where}`);
      assert.ok(!text.includes(pan.slice(0, 4) + " " + pan.slice(4, 8)), `a formatted card number is in the page's ${where}`);
    }
    for (const c of codes) assert.ok(!new RegExp(`["=:]${c}["\\s,}]`).test(text), `the security code is in the page's ${where}`);
  }
  for (const m of messages) {
    const data = JSON.parse(m);
    if (data?.tag !== "payorch-secure-fields") continue;
    const allowed = new Set(["tag", "channel", "field", "type", "meta", "card", "error"]);
    for (const k of Object.keys(data)) assert.ok(allowed.has(k), `a field message carries ${k}`);
  }
}

test("typing a card, submitting and paying with the checkout session works end to end", { skip }, async () => {
  const session = await mount();
  const iframes = await page.$$eval("iframe[data-secure-field]", (els) => els.map((e) => ({
    sandbox: e.getAttribute("sandbox"), title: e.getAttribute("title"), src: e.getAttribute("src") })));
  assert.equal(iframes.length, 3);
  for (const f of iframes) {
    assert.equal(f.sandbox, "allow-scripts allow-same-origin");
    assert.ok(f.title && f.title.length > 5, "the iframe has an accessible title");
    assert.ok(f.src?.startsWith(VAULT + "/securefields/field.html?"));
  }
  await typeCard();
  await untilComplete();
  const change = await lastChange();
  assert.deepEqual(change, {
    complete: true, scheme: "visa", bin: "41111111", last4: "1111",
    fields: {
      number: { empty: false, complete: true, valid: true, scheme: "visa", bin: "41111111", last4: "1111" },
      expiryDate: { empty: false, complete: true, valid: true },
      securityCode: { empty: false, complete: true, valid: true },
    },
  });
  await page.evaluate(() => /** @type {any} */ (window).sf.submit());
  const card = await event("CARD_VAULT_SUCCESS");
  assert.deepEqual(card, { scheme: "visa", bin: "41111111", last4: "1111", expirationDate: "12/34" });
  const tx = await page.evaluate(async (s) => (await fetch("/server/pay?session=" + s, { method: "POST" })).json(), session);
  assert.equal(tx.status, "authorization_succeeded", JSON.stringify(tx));
  assert.equal(tx.cvv_response_code, "M", "the security code typed reached the processor");
  assert.equal(tx.payment_method.label, "1111");
  await assertNothingLeaked();
});

test("the page cannot read the fields' documents; the fields' inputs are numeric and autofillable", { skip }, async () => {
  await mount();
  const reads = await page.evaluate(() => [...document.querySelectorAll("iframe[data-secure-field]")].map((f) => {
    try {
      return /** @type {HTMLIFrameElement} */ (f).contentWindow?.document.body.innerHTML ?? "null";
    } catch (e) {
      return /** @type {Error} */ (e).name;
    }
  }));
  assert.deepEqual(reads, ["SecurityError", "SecurityError", "SecurityError"]);
  for (const [kind, ac] of [["number", "cc-number"], ["expiryDate", "cc-exp"], ["securityCode", "cc-csc"]]) {
    assert.equal(await inputOf(kind).getAttribute("inputmode"), "numeric");
    assert.equal(await inputOf(kind).getAttribute("autocomplete"), ac);
  }
});

test("a paste of a spaced or dashed number and an autofilled number and expiry are taken", { skip }, async () => {
  await mount();
  await inputOf("number").focus();
  await page.keyboard.insertText("4111 1111-1111 1111"); // what a paste inserts
  assert.equal(await inputOf("number").inputValue(), "4111 1111 1111 1111");
  // Autofill sets the value and fires input, as fill does.
  await inputOf("number").fill("5555555555554444");
  await inputOf("expiryDate").fill("12/2034");
  assert.equal(await inputOf("expiryDate").inputValue(), "12/34");
  await inputOf("securityCode").fill("123");
  await untilComplete();
  const change = await lastChange();
  assert.equal(change.scheme, "mastercard");
  await page.evaluate(() => /** @type {any} */ (window).sf.submit());
  const card = await event("CARD_VAULT_SUCCESS");
  assert.equal(card.last4, "4444");
  await assertNothingLeaked(["5555555555554444"], ["123"]);
});

test("an expired session and a used one are refused through CARD_VAULT_FAILURE", { skip }, async () => {
  const session = await mount();
  await typeCard();
  await page.evaluate(async (s) => fetch("/server/expire?session=" + s, { method: "POST" }), session);
  await page.evaluate(() => /** @type {any} */ (window).sf.submit());
  const expired = await event("CARD_VAULT_FAILURE");
  assert.equal(expired.code, "checkout_session_expired");
  assert.equal(expired.status, 422);
  assert.match(expired.message, /expired/);

  const used = await mount();
  await typeCard();
  await page.evaluate(() => /** @type {any} */ (window).sf.submit());
  await event("CARD_VAULT_SUCCESS");
  const tx = await page.evaluate(async (s) => (await fetch("/server/pay?session=" + s, { method: "POST" })).json(), used);
  assert.equal(tx.status, "authorization_succeeded");
  await page.evaluate(() => /** @type {any} */ (window).sf.submit());
  const refused = await event("CARD_VAULT_FAILURE");
  assert.equal(refused.code, "checkout_session_used");
  assert.match(refused.message, /used/);
});

test("a page whose origin is not allowed gets no fields, and is told so", { skip }, async () => {
  await page.goto(FOREIGN + "/checkout.html");
  const failure = await page.evaluate(async () => {
    const r = await fetch("/server/session", { method: "POST" });
    const session = (await r.json()).id;
    const w = /** @type {any} */ (window);
    const sf = new w.SecureFields({ sessionId: session });
    const got = new Promise((resolve) => sf.on("CARD_VAULT_FAILURE", resolve));
    sf.addCardNumberField("#card-number");
    return got;
  });
  assert.equal(/** @type {any} */ (failure).code, "fields_unavailable");
  const frames = page.frames().filter((f) => f.url().startsWith(VAULT));
  for (const f of frames) {
    const text = await f.evaluate(() => document.body?.innerText ?? "").catch(() => "blocked");
    assert.ok(!/Card number/.test(text), "the field page was shown to an origin not allowed");
  }
});

test("an incomplete form is not sent", { skip }, async () => {
  await mount();
  await inputOf("number").pressSequentially("4111");
  await page.evaluate(() => /** @type {any} */ (window).sf.submit());
  const failure = await event("CARD_VAULT_FAILURE");
  assert.equal(failure.code, "invalid_fields");
});

test("messages from a foreign origin are ignored by the page's loader and by the fields", { skip }, async () => {
  await mount({ path: "/checkout.html?foreign=1" });
  await typeCard();
  await untilComplete();
  const before = await eventCount();
  const channel = await page.evaluate(() => new URL(/** @type {HTMLIFrameElement} */ (document.querySelector("iframe[data-secure-field]")).src).searchParams.get("channel"));
  await page.evaluate(([ch, origin]) => /** @type {HTMLIFrameElement} */ (document.getElementById("foreign")).contentWindow?.postMessage({ forge: true, channel: ch }, origin), [channel, FOREIGN]);
  // The foreign messages did arrive (the page's own listener saw them)...
  await page.waitForFunction((o) => /** @type {any} */ (window).seenMessages.some((/** @type {any} */ m) => m.origin === o), FOREIGN);
  await page.waitForTimeout(500);
  // ...and changed nothing: no event, no reset, no mask.
  assert.equal(await eventCount(), before);
  assert.equal(await inputOf("number").inputValue(), "4111 1111 1111 1111");
  assert.equal(await inputOf("securityCode").inputValue(), CODE);
});

test("auto focus: off, nothing is focused; on, the field is", { skip }, async () => {
  await mount();
  await page.waitForTimeout(300);
  assert.equal(await focused(), "");
  await mount({ expiry: { autoFocus: true } });
  await page.waitForFunction(() => /** @type {HTMLElement|null} */ (document.activeElement)?.dataset?.secureField === "expiryDate");
  assert.equal(await focused(), "expiryDate");
});

test("auto advance: off, focus stays; on, it moves number → expiry → code in the order given", { skip }, async () => {
  await mount();
  await inputOf("number").pressSequentially(PAN);
  await page.waitForTimeout(300);
  assert.equal(await focused(), "number");

  await mount({ form: { autoAdvance: true }, order: ["number", "expiry", "code"] });
  await inputOf("number").pressSequentially(PAN);
  await page.waitForFunction(() => /** @type {HTMLElement|null} */ (document.activeElement)?.dataset?.secureField === "expiryDate");
  assert.equal(await focused(), "expiryDate");
  await page.keyboard.type("1234");
  await page.waitForFunction(() => /** @type {HTMLElement|null} */ (document.activeElement)?.dataset?.secureField === "securityCode");
  assert.equal(await focused(), "securityCode");
  await page.keyboard.type(CODE);
  await untilComplete();
});

test("masking: off, digits show; on, masked, with the last four on request; the card is still sent whole", { skip }, async () => {
  await mount();
  await typeCard();
  assert.equal(await inputOf("number").inputValue(), "4111 1111 1111 1111");
  assert.equal(await inputOf("securityCode").inputValue(), CODE);

  await mount({ number: { masked: true, showLastFour: true }, code: { masked: true } });
  await typeCard();
  assert.equal(await inputOf("number").inputValue(), "•••• •••• •••• 1111");
  assert.equal(await inputOf("securityCode").inputValue(), "•••");
  await inputOf("securityCode").press("Backspace");
  assert.equal(await inputOf("securityCode").inputValue(), "••");
  await inputOf("securityCode").pressSequentially("7");
  assert.equal(await inputOf("securityCode").inputValue(), "•••");
  await untilComplete();
  await page.evaluate(() => /** @type {any} */ (window).sf.submit());
  assert.equal((await event("CARD_VAULT_SUCCESS")).last4, "1111");

  await mount({ number: { masked: true } });
  await inputOf("number").pressSequentially(PAN);
  assert.equal(await inputOf("number").inputValue(), "•••• •••• •••• ••••");
  await assertNothingLeaked();
});

test("setMasked toggles the mask without the value reaching the page", { skip }, async () => {
  await mount();
  await typeCard();
  await untilComplete();
  const before = await eventCount();
  await page.evaluate(() => /** @type {any} */ (window).fields.number.setMasked(true));
  await page.waitForFunction(() => true);
  await assert.doesNotReject(async () => {
    await frameOf("number").locator("input").evaluate((el) => new Promise((r) => {
      const check = () => (/** @type {HTMLInputElement} */ (el).value.startsWith("•") ? r(true) : setTimeout(check, 20));
      check();
    }));
  });
  assert.equal(await inputOf("number").inputValue(), "•••• •••• •••• ••••");
  await page.evaluate(() => /** @type {any} */ (window).fields.number.setMasked(false));
  await page.waitForTimeout(200);
  assert.equal(await inputOf("number").inputValue(), "4111 1111 1111 1111");
  assert.equal(await eventCount(), before, "a mask toggle tells the page nothing");
  await assertNothingLeaked();
});

test("reset: one field, then the whole form; FORM_CHANGE reports incomplete", { skip }, async () => {
  await mount();
  await typeCard();
  await untilComplete();
  let n = await eventCount();
  await page.evaluate(() => /** @type {any} */ (window).fields.number.reset());
  await event("FORM_CHANGE", n);
  let change = await lastChange();
  assert.equal(change.complete, false);
  assert.deepEqual(change.fields.number, { empty: true, complete: false, valid: false, scheme: null, bin: null, last4: null });
  assert.equal(await inputOf("number").inputValue(), "");
  assert.equal(await inputOf("expiryDate").inputValue(), "12/34");
  n = await eventCount();
  await page.evaluate(() => /** @type {any} */ (window).sf.reset());
  await page.waitForFunction(() => {
    const c = /** @type {any} */ (window).events.filter((/** @type {any} */ e) => e.type === "FORM_CHANGE").at(-1)?.detail;
    return c && c.fields.expiryDate.empty && c.fields.securityCode.empty;
  });
  change = await lastChange();
  assert.equal(change.complete, false);
  for (const k of ["number", "expiryDate", "securityCode"]) assert.equal(await inputOf(k).inputValue(), "");
});

test("scheme icons: off, none; on, the icon follows the BIN, from the package's own files", { skip }, async () => {
  await mount();
  await inputOf("number").pressSequentially("4111");
  assert.equal(await frameOf("number").locator("img").count(), 0);

  const iconRequests = [];
  page.on("request", (r) => { if (r.resourceType() === "image") iconRequests.push(r.url()); });
  await mount({ number: { schemeIcon: true } });
  const icon = frameOf("number").locator("img.scheme-icon");
  assert.equal(await icon.getAttribute("data-scheme"), "generic");
  await inputOf("number").pressSequentially("4111");
  assert.equal(await icon.getAttribute("data-scheme"), "visa");
  assert.equal(await icon.getAttribute("alt"), "");
  await inputOf("number").fill("3782");
  assert.equal(await icon.getAttribute("data-scheme"), "amex");
  await inputOf("number").fill("5555");
  assert.equal(await icon.getAttribute("data-scheme"), "mastercard");
  const loaded = await icon.evaluate((el) => /** @type {HTMLImageElement} */ (el).complete && /** @type {HTMLImageElement} */ (el).naturalWidth > 0);
  assert.ok(loaded, "the icon loaded");
  for (const u of iconRequests) assert.ok(u.startsWith(VAULT + "/securefields/icons/"), `an image from elsewhere: ${u}`);
});

test("styles: allowed properties and safe fonts apply; url(), other properties and web fonts do not", { skip }, async () => {
  await mount({ number: { placeholder: "Card number", styles: { base: { color: "rgb(10, 20, 30)", fontFamily: "Georgia, serif",
    backgroundImage: "url(https://evil.example/x.png)", position: "fixed" }, invalid: { color: "rgb(200, 0, 0)" } } },
  expiry: { styles: { base: { color: "url(https://evil.example/x)", fontFamily: "Comic Neue, cursive" } } } });
  const number = await frame("number");
  const st = await number.evaluate(() => {
    const el = /** @type {HTMLInputElement} */ (document.getElementById("field"));
    const cs = getComputedStyle(el);
    return { color: cs.color, font: cs.fontFamily, bg: cs.backgroundImage, position: cs.position, placeholder: el.placeholder };
  });
  assert.deepEqual(st, { color: "rgb(10, 20, 30)", font: "Georgia, serif", bg: "none", position: "static", placeholder: "Card number" });
  await inputOf("number").pressSequentially("5555555555554445"); // a full Mastercard length failing its check digit
  assert.equal(await number.evaluate(() => getComputedStyle(/** @type {HTMLElement} */ (document.getElementById("field"))).color), "rgb(200, 0, 0)");
  assert.equal(await inputOf("number").getAttribute("aria-invalid"), "true");
  const expiry = await frame("expiryDate");
  const ex = await expiry.evaluate(() => getComputedStyle(/** @type {HTMLElement} */ (document.getElementById("field"))).fontFamily);
  assert.ok(!/comic/i.test(ex), "a font outside the safe list was applied");
  assert.ok(consoleLines.some((l) => /styles not allowed/.test(l)), "the loader warns of the styles it dropped");
});

test("the loader is refused when its integrity does not match", { skip }, async () => {
  await page.goto(MERCHANT + "/tampered.html");
  assert.equal(await page.evaluate(() => typeof (/** @type {any} */ (window).SecureFields)), "undefined");
  await page.goto(MERCHANT + "/checkout.html");
  assert.equal(await page.evaluate(() => typeof (/** @type {any} */ (window).SecureFields)), "function");
});

test("axe-core reports no violations on the field page", { skip }, async () => {
  await mount({ number: { schemeIcon: true } });
  await inputOf("number").pressSequentially("4111");
  for (const kind of ["number", "expiryDate", "securityCode"]) {
    const src = await page.$eval(`iframe[data-secure-field="${kind}"]`, (e) => /** @type {HTMLIFrameElement} */ (e).src);
    assert.ok(src);
  }
  const results = await new AxeBuilder({ page }).include("iframe[data-secure-field]").analyze();
  const summary = results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  assert.deepEqual(summary, []);
});
