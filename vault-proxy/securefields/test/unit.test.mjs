// @ts-check
// The card rules and the style whitelist, from the TypeScript sources
// (bundled on the fly by esbuild), without a browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { buildSync } from "esbuild";
import { fileURLToPath } from "node:url";

/** @param {string} entry */
async function load(entry) {
  const out = buildSync({ entryPoints: [fileURLToPath(new URL(entry, import.meta.url))], bundle: true, format: "esm", write: false, platform: "neutral" });
  return import("data:text/javascript;base64," + Buffer.from(out.outputFiles[0].text).toString("base64"));
}

const card = await load("../src/card.ts");
const styles = await load("../src/styles.ts");

test("schemes by their leading digits", () => {
  for (const [digits, want] of [["4111", "visa"], ["5555", "mastercard"], ["2221", "mastercard"], ["3782", "amex"], ["3056", "diners"],
    ["3530", "jcb"], ["6011", "discover"], ["6200", "unionpay"], ["6759", "maestro"], ["9999", null], ["", null]]) {
    assert.equal(card.schemeOf(digits), want, digits);
  }
});

test("number state: complete at its scheme's length with a good check digit", () => {
  assert.deepEqual(card.numberState("4111111111111111"), { empty: false, complete: true, valid: true, scheme: "visa" });
  assert.deepEqual(card.numberState("5555555555554445"), { empty: false, complete: false, valid: false, scheme: "mastercard" });
  assert.deepEqual(card.numberState("378282246310005"), { empty: false, complete: true, valid: true, scheme: "amex" });
  assert.deepEqual(card.numberState(""), { empty: true, complete: false, valid: false, scheme: null });
  assert.equal(card.numberState("4111").valid, true, "not wrong while typing");
});

test("BIN of 6, or 8 for a complete number of 16 or more; never more", () => {
  assert.equal(card.binOf("41111", false), null);
  assert.equal(card.binOf("4111111111", false), "411111");
  assert.equal(card.binOf("4111111111111111", true), "41111111");
  assert.equal(card.binOf("378282246310005", true), "378282");
});

test("display formats and paste parsing", () => {
  assert.equal(card.formatNumber(card.digitsOf("4111-1111 1111-1111")), "4111 1111 1111 1111");
  assert.equal(card.formatNumber("378282246310005"), "3782 822463 10005");
  for (const [raw, want] of [["12/30", "1230"], ["1230", "1230"], ["12 / 2030", "1230"], ["122030", "1230"], ["4", "04"], ["1", "1"], ["12/3", "123"]]) {
    assert.equal(card.expiryDigits(raw), want, raw);
  }
});

test("expiry and security code state", () => {
  const now = new Date(2026, 10, 27);
  assert.deepEqual(card.expiryState("1126", now), { empty: false, complete: true, valid: true });
  assert.deepEqual(card.expiryState("1026", now), { empty: false, complete: false, valid: false });
  assert.deepEqual(card.expiryState("13", now), { empty: false, complete: false, valid: false });
  assert.deepEqual(card.codeState("123", "visa"), { empty: false, complete: true, valid: true });
  assert.deepEqual(card.codeState("123", "amex"), { empty: false, complete: false, valid: true });
  assert.deepEqual(card.codeState("1234", "amex"), { empty: false, complete: true, valid: true });
});

test("styles: whitelisted properties, no url(), safe fonts only", () => {
  const rejected = [];
  const out = styles.sanitizeStyles({
    base: { color: "#123", fontFamily: "Arial, sans-serif", backgroundImage: "url(x)", position: "fixed", fontSize: "16px;color:red" },
    focus: { color: "url(https://x.example)", fontFamily: "Comic Sans MS" },
    invalid: { color: "red" },
    hover: { color: "blue" },
  }, rejected);
  assert.deepEqual(out, { base: { color: "#123", "font-family": "Arial, sans-serif" }, focus: {}, invalid: { color: "red" } });
  assert.deepEqual(rejected.sort(), ["backgroundImage", "color", "fontFamily", "fontSize", "position"].sort());
});
