// The dashboard's browser test, in Debian's Chromium through
// playwright-core (never a downloaded browser). e2e/dashboard_browser_test.go
// starts the real stack, creates the users and data, runs this script
// with their names in the environment and then checks through the APIs
// what the clicks did. Screenshots go to $ARTIFACTS for review.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createRequire } from "node:module";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const url = env("DASHBOARD_URL");
const password = env("PASSWORD");
const artifacts = env("ARTIFACTS");
const axePath = join(dirname(createRequire(import.meta.url).resolve("axe-core")), "axe.min.js");

const failures = [];
function check(ok, what) {
  if (!ok) failures.push(what);
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
}

const userDataDir = mkdtempSync(join(tmpdir(), "payorch-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    // Trust vault-proxy's development certificate, by its key, and nothing else.
    `--ignore-certificate-errors-spki-list=${env("VAULT_PROXY_SPKI")}`],
  // axe-core is injected as an inline script, which the page's CSP forbids.
  bypassCSP: true,
  viewport: { width: 1280, height: 900 },
});
const page = context.pages()[0] ?? (await context.newPage());
page.setDefaultTimeout(15000);
// Every request the page sends, to show where a secret typed into it went.
const requests = [];
page.on("request", (r) => requests.push({ method: r.method(), url: r.url(), body: r.postData() ?? "" }));

async function axe(name) {
  await page.addScriptTag({ path: axePath });
  const res = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ["violations"] }));
  const v = res.violations.map((x) => `${x.id} (${x.nodes.length}): ${x.help}`);
  check(v.length === 0, `axe: no violations on ${name}${v.length ? ": " + v.join("; ") : ""}`);
}
async function shot(name) {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}
/** A payment of the admin's stored card through payment service id, made
 * from the page with its own bearer token; the transaction answered. */
async function payThrough(id) {
  return page.evaluate(async ({ pm, id }) => {
    const s = await (await fetch("/dashboard/session")).json();
    const t = await (await fetch("/dashboard/token", { method: "POST", headers: { "X-CSRF-Token": s.csrf_token } })).json();
    const r = await fetch("/transactions", {
      method: "POST",
      headers: { Authorization: "Bearer " + t.access_token, "Content-Type": "application/json",
        "Idempotency-Key": crypto.randomUUID(), "x-service-merchant-account-id": "default" },
      body: JSON.stringify({ amount: 1200, currency: "EUR", country: "DE", payment_method: { method: "id", id: pm }, payment_service_id: id }),
    });
    return r.json();
  }, { pm: env("PM_ID"), id });
}
async function signIn(email, pw = password) {
  await page.goto(url + "/");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(pw);
  await page.getByRole("button", { name: "Sign in" }).click();
}

try {
  // --- brute force: the lockout, and its message shown as the API gave it
  await page.goto(url + "/");
  await axe("sign-in");
  await shot("sign-in");
  for (let i = 0; i < 5; i++) {
    await signIn(env("LOCKED_EMAIL"), "not-the-password-" + i);
    await page.getByRole("alert").waitFor();
  }
  await signIn(env("LOCKED_EMAIL"));
  const lockText = await page.getByRole("alert").textContent();
  check(/too many failed sign-ins/.test(lockText ?? ""), `locked out after repeated failures (got "${lockText}")`);
  await shot("sign-in-locked");

  // --- admin: transactions, capture from the detail page, buyers
  await signIn(env("ADMIN_EMAIL"));
  await page.getByRole("heading", { name: "Transactions" }).waitFor();
  await page.getByRole("row").nth(1).waitFor();
  await axe("transactions");
  await shot("transactions");
  await page.setViewportSize({ width: 360, height: 740 });
  await shot("transactions-360px");
  await page.setViewportSize({ width: 1280, height: 900 });

  await page.goto(`${url}/#/transactions/${env("TX_ID")}`);
  await page.getByTestId("tx-status").filter({ hasText: "authorization_succeeded" }).waitFor();
  await axe("transaction");
  await page.getByRole("button", { name: "Capture" }).click();
  await page.getByTestId("tx-status").filter({ hasText: "capture_succeeded" }).waitFor();
  await page.getByRole("list", { name: "Events" }).getByText(/capture/i).first().waitFor();
  check(true, "the capture event is on the timeline");
  await shot("transaction-captured");
  // An API error is shown with the API's message: nothing is left to capture.
  await page.getByRole("button", { name: "Capture" }).click();
  const err = await page.getByRole("alert").textContent();
  check(!!err && !/^HTTP \d+$/.test(err), `a refused capture shows the API's message (got "${err}")`);

  await page.getByRole("link", { name: "Buyers" }).click();
  await page.getByRole("heading", { name: "Buyers" }).waitFor();
  await page.getByRole("row").nth(1).waitFor();
  await axe("buyers");
  await shot("buyers");
  await page.getByRole("row").nth(1).getByRole("link").click();
  await page.getByRole("heading", { name: "Payment methods" }).waitFor();
  await axe("buyer");
  await shot("buyer");

  // --- vault forwarding: a config, its hosts edited, a signature method
  // whose key goes from the page to vault-proxy and is never shown again.
  await page.getByRole("link", { name: "Vault forwarding" }).click();
  await page.getByLabel("Name").fill("Processor");
  await page.getByLabel("Hosts (one per line: host or host:port)").fill(env("TARGET_HOST"));
  await page.getByRole("button", { name: "Create config" }).click();
  await page.getByRole("heading", { name: "Processor" }).waitFor();
  const configId = page.url().split("/").pop();
  await page.getByLabel("Hosts (one per line)").fill(env("TARGET_HOST") + "\nexample.org:8443");
  await page.getByRole("button", { name: "Save hosts" }).click();
  await page.getByRole("status").filter({ hasText: "Hosts saved." }).waitFor();
  await page.getByLabel("Kind").selectOption("signature");
  await page.getByLabel("Name").fill("Processor HMAC");
  await page.getByLabel("Algorithm (hmac-sha256, ed25519, ...)").fill("hmac-sha256");
  await page.getByLabel("Key id").fill("hk1");
  await page.getByLabel("Key", { exact: true }).fill(env("HMAC_KEY"));
  await page.getByRole("button", { name: "Add authentication" }).click();
  const method = page.getByRole("list", { name: "Authentication methods" }).getByRole("listitem").first();
  await method.waitFor();
  const methodText = (await method.textContent()) ?? "";
  check(/set \(write-only\)/.test(methodText), "the key is shown as set");
  check(!(await page.content()).includes(env("HMAC_KEY")), "the key is not in the page once added");
  check((await page.getByLabel("Key", { exact: true }).inputValue()) === "", "the key field is cleared");
  const authId = await method.locator("code").textContent();
  writeFileSync(env("RESULTS"), JSON.stringify({ configId, authId }));
  await axe("vault forwarding config");
  await shot("vault-forward-config");
  await page.getByRole("link", { name: "All forwarding configs" }).click();
  await page.getByRole("row").nth(1).waitFor();
  await axe("vault forwarding");
  await shot("vault-forward");

  // --- payment services: the anti-fraud API version toggle
  await page.getByRole("link", { name: "Payment services" }).click();
  await page.getByRole("group", { name: "Anti-fraud API version of Screening" }).waitFor();
  await axe("payment services");
  await page.getByRole("radio", { name: "v10.2" }).click();
  await page.getByRole("status").filter({ hasText: "Screening now uses API v10.2." }).waitFor();
  check(await page.getByRole("radio", { name: "v10.2" }).isChecked(), "the anti-fraud toggle shows v10.2");
  await shot("payment-services");

  // A mock-card payment service made through the page with a key mock-card
  // refuses (a payment through it fails), then its key replaced through the
  // page (a payment through it succeeds): the new key is the one used. No
  // key is shown again; e2e reads the service and both payments back.
  const refusedKey = "mc_live_dashboardKEY1";
  const acceptedKey = "mc_test_dashboardKEY2";
  const newService = page.getByRole("form", { name: "New payment service" });
  await newService.getByLabel("Connector", { exact: true }).selectOption("mock-card");
  await newService.getByLabel("Payment method", { exact: true }).selectOption("card");
  await newService.getByLabel("Display name (optional)").fill("Dashboard card");
  await newService.getByLabel(/^merchant_descriptor/).fill("DASH SHOP");
  await newService.getByRole("button", { name: "Create payment service" }).click();
  const psErr = (await newService.getByRole("alert").textContent()) ?? "";
  check(psErr.includes("/credentials/api_key: is required"), `a refused create shows the API's message and detail (got "${psErr}")`);
  await newService.getByLabel("api_key", { exact: true }).fill(refusedKey);
  await axe("payment services, new");
  await shot("payment-service-new");
  const created = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/payment-services");
  await newService.getByRole("button", { name: "Create payment service" }).click();
  const serviceId = (await (await created).json()).id;
  await page.getByRole("status").filter({ hasText: "Payment service Dashboard card created." }).waitFor();
  const serviceItem = page.getByRole("list", { name: "Payment services" }).getByRole("listitem").filter({ hasText: "Dashboard card" });
  check(/set: api_key/.test((await serviceItem.textContent()) ?? ""), "the new service's api_key is shown as set");
  check((await newService.getByLabel("api_key", { exact: true }).inputValue()) === "", "the create form's key field is cleared");
  const refusedTx = await payThrough(serviceId);
  check(refusedTx.error_code === "invalid_credentials", `a payment with the created key is refused by mock-card (got ${refusedTx.status})`);

  await serviceItem.getByRole("button", { name: "Edit Dashboard card" }).click();
  const editService = page.getByRole("form", { name: "Edit Dashboard card" });
  check(/Stored: api_key/.test((await editService.textContent()) ?? ""), "the edit form names the stored credentials");
  check((await editService.getByLabel(/^merchant_descriptor/).inputValue()) === "DASH SHOP", "the edit form holds the settings");
  await editService.getByLabel("Display name (optional)").fill("Dashboard card EU");
  await editService.getByLabel("New api_key").fill(acceptedKey);
  await axe("payment services, edit");
  await shot("payment-service-edit");
  await editService.getByRole("button", { name: "Save Dashboard card" }).click();
  await page.getByRole("status").filter({ hasText: "Dashboard card EU saved." }).waitFor();
  const acceptedTx = await payThrough(serviceId);
  check(acceptedTx.status === "authorization_succeeded", `a payment with the replaced key succeeds (got ${acceptedTx.status})`);
  const psPage = await page.content();
  check(!psPage.includes(refusedKey) && !psPage.includes(acceptedKey), "no key is in the page once saved");
  const keyRequests = requests.filter((r) => r.body.includes(acceptedKey));
  check(keyRequests.length === 1 && keyRequests[0].method === "PUT" && keyRequests[0].url === `${url}/payment-services/${serviceId}`,
    "the replaced key went to core-api's PUT /payment-services alone");
  await shot("payment-services-saved");
  writeFileSync(env("SERVICES_RESULTS"), JSON.stringify({ serviceId, refusedTx: refusedTx.id, acceptedTx: acceptedTx.id }));

  // --- webhook subscriptions: an attempt's request and response
  // unfolded by keyboard, deliveries with a retry, a new one whose secret
  // is shown once, a rotation
  await page.getByRole("link", { name: "Webhooks" }).click();
  const hooksURL = env("HOOKS_URL");
  await page.getByRole("button", { name: `Deliveries of ${hooksURL}` }).click();
  const deliveries = page.getByRole("list", { name: `Deliveries of ${hooksURL}` });
  await deliveries.getByRole("listitem").first().waitFor();
  const exchange = deliveries.locator("details.exchange").first();
  await exchange.locator("summary").first().focus();
  await page.keyboard.press("Enter");
  const answer = exchange.locator("pre").filter({ hasText: env("HOOKS_ANSWER") });
  await answer.waitFor();
  check(await answer.isVisible(), "an attempt's response body, sent by the receiver, is on the page");
  check((await answer.locator("b").count()) === 0 && (await answer.textContent()) === env("HOOKS_ANSWER"),
    "the response body is shown as text, its markup not rendered");
  check(/webhook-signature: v1,/.test((await exchange.locator("pre").first().textContent()) ?? ""),
    "the request's headers are shown");
  await exchange.locator("details summary").first().focus();
  await page.keyboard.press("Enter");
  await exchange.locator("details pre").filter({ hasText: '"type":"event"' }).waitFor();
  check(true, "the request body (the event's payload) is shown");
  await axe("webhook attempt");
  await page.setViewportSize({ width: 360, height: 740 });
  await shot("webhook-attempt-360px");
  await page.setViewportSize({ width: 1280, height: 900 });
  await deliveries.getByRole("button", { name: /^Retry / }).first().click();
  await page.getByRole("status").filter({ hasText: "queued again" }).waitFor();
  check(true, "a delivery retried");
  await page.getByLabel("Endpoint URL").fill(hooksURL.replace("/hooks", "/other"));
  await page.getByRole("button", { name: "Create subscription" }).click();
  const secretText = await page.getByRole("status").filter({ hasText: "Signing secret" }).textContent();
  check(/whsec_/.test(secretText ?? ""), "the new subscription's secret is shown once");
  await page.getByRole("button", { name: `Rotate secret of ${hooksURL}` }).click();
  await page.getByText(/The previous secret signs until/).waitFor();
  await axe("webhooks");
  await shot("webhooks");

  // --- 3-D Secure scenarios: add one through the form, reorder by button
  // and by drag; e2e checks the order through the API.
  await page.getByRole("link", { name: "3-D Secure scenarios" }).click();
  const scenarios = page.getByRole("list", { name: "Scenarios in evaluation order" }).getByRole("listitem");
  await scenarios.nth(1).waitFor();
  await page.getByLabel("Email address").fill("c@example.com");
  await page.getByLabel("Authentication status").selectOption("C");
  await page.getByLabel("Challenge result").selectOption("N");
  await page.getByRole("button", { name: "Add scenario" }).click();
  await scenarios.nth(2).filter({ hasText: "c@example.com" }).waitFor();
  await axe("3-D Secure scenarios");
  await page.getByRole("button", { name: "Move scenario 3 up" }).click();
  await scenarios.nth(1).filter({ hasText: "c@example.com" }).waitFor();
  await scenarios.nth(2).dragTo(scenarios.nth(0));
  await scenarios.nth(0).filter({ hasText: "b@example.com" }).waitFor();
  await shot("three-ds-scenarios");
  check(true, "3-D Secure scenarios added and reordered");

  // A card_number condition: typed into the page, sent to vault-proxy and
  // nowhere else, listed as the card's first 6 digits and last 4; edited
  // without typing the number again, it keeps its card.
  const card = env("SCENARIO_CARD");
  const masked = `card = ${card.slice(0, 6)}\u2026${card.slice(-4)}`;
  const vaultProxy = await page.evaluate(() => document.querySelector('meta[name="payorch-vault-proxy"]')?.content ?? "");
  await page.getByLabel("Card number (sent to vault-proxy only)").fill(card);
  await page.getByLabel("Authentication status").selectOption("N");
  await shot("three-ds-card-scenario-new");
  await page.getByRole("button", { name: "Add scenario" }).click();
  await scenarios.nth(3).filter({ hasText: masked }).waitFor();
  check((await page.getByLabel("Card number (sent to vault-proxy only)").inputValue()) === "", "the card number field is cleared");
  check(!(await page.content()).includes(card), "the card number is not in the page");
  await page.getByRole("button", { name: "Edit scenario 4" }).click();
  await page.getByText(/kept unless another number is typed/).waitFor();
  await axe("3-D Secure scenarios, card condition");
  await shot("three-ds-card-scenario-edit");
  await page.getByLabel("Authentication status").selectOption("R");
  await page.getByRole("button", { name: "Save scenario" }).click();
  await scenarios.nth(3).filter({ hasText: masked }).filter({ hasText: "→ R" }).waitFor();
  const carrying = requests.filter((r) => r.body.includes(card));
  check(carrying.length === 1 && carrying[0].method === "POST" && carrying[0].url === `${vaultProxy}/three-ds-scenarios`,
    `the card number went to vault-proxy's POST /three-ds-scenarios alone (got ${carrying.map((r) => r.method + " " + r.url).join(", ")})`);
  const edit = requests.filter((r) => r.method === "PUT" && r.url.includes("/three-ds-scenarios/")).pop();
  check(!!edit && edit.url.startsWith(url + "/") && /"card_condition":\{"id":"[0-9a-f-]{36}"\}/.test(edit.body),
    "the edit without a number went to core-api with the condition's reference");

  // Keyboard: on a fresh load the skip link is the first stop.
  await page.reload();
  await page.getByRole("heading", { name: "3-D Secure scenarios" }).waitFor();
  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => document.activeElement?.textContent);
  check(focused === "Skip to content", `the first Tab stop is the skip link (got "${focused}")`);

  // --- CSRF: a page of another origin posts to the dashboard with the
  // admin's cookie; core-api refuses, and the session survives.
  await page.goto(env("EVIL_URL"));
  await page.waitForURL(/dashboard\/sign-out/);
  const body = await page.textContent("body");
  check(/cross-origin request refused/.test(body ?? ""), `a cross-origin form post is refused (got ${body})`);
  await page.goto(url + "/");
  await page.getByRole("heading", { name: "Transactions" }).waitFor();
  check(true, "the session survived the cross-origin post");

  // --- team: the admin adds a viewer, by keyboard, and is shown the
  // generated password once; a taken email shows the API's message.
  await page.getByRole("link", { name: "Team" }).click();
  await page.getByRole("list", { name: "Users" }).getByText("viewer@example.com", { exact: true }).waitFor();
  await axe("team");
  await page.getByLabel("Email").focus();
  await page.keyboard.type(env("TEAM_VIEWER_EMAIL"));
  await page.keyboard.press("Tab"); // the role: viewer is chosen
  await page.keyboard.press("Tab"); // every account (*)
  await page.keyboard.press("Tab"); // default
  await page.keyboard.press("Space");
  await page.keyboard.press("Enter");
  const shown = (await page.getByTestId("new-password").textContent()) ?? "";
  check(shown.length >= 12, "the new user's generated password is shown");
  await page.getByRole("list", { name: "Users" }).getByText(env("TEAM_VIEWER_EMAIL"), { exact: true }).waitFor();
  await shot("team");
  await page.setViewportSize({ width: 360, height: 740 });
  await shot("team-360px");
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.reload();
  await page.getByRole("list", { name: "Users" }).getByText(env("TEAM_VIEWER_EMAIL"), { exact: true }).waitFor();
  check(!(await page.content()).includes(shown), "the generated password is not shown again");
  await page.getByLabel("Email").fill(env("VIEWER_EMAIL"));
  await page.getByRole("checkbox", { name: "default" }).check();
  await page.getByRole("button", { name: "Add user" }).click();
  const taken = await page.getByRole("alert").textContent();
  check(/already exists/.test(taken ?? ""), `a taken email shows the API's message (got "${taken}")`);

  // The admin resets the new viewer's password on the Team page, after a
  // confirmation: a second generated password, shown once; the first no
  // longer signs in.
  const member = page.getByRole("list", { name: "Users" }).getByRole("listitem").filter({ hasText: env("TEAM_VIEWER_EMAIL") });
  check(/must change their password/.test((await member.textContent()) ?? ""), "the new viewer is listed as having to change their password");
  await member.getByRole("button", { name: `Reset password of ${env("TEAM_VIEWER_EMAIL")}` }).click();
  await axe("team, password reset confirmation");
  await member.getByRole("button", { name: `Confirm password reset of ${env("TEAM_VIEWER_EMAIL")}` }).click();
  await page.getByRole("status").filter({ hasText: "has a new password" }).waitFor();
  const reset = (await page.getByTestId("new-password").textContent()) ?? "";
  check(reset.length >= 12 && reset !== shown, "the reset password is shown, and differs from the first");
  await axe("team, password reset");
  await shot("team-password-reset");

  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("button", { name: "Sign in" }).waitFor();

  // --- the new viewer signs in with the first password: refused; with the
  // reset one: taken to Change password before anything else. Then no
  // Team page, no write action; a session ended elsewhere returns the
  // page to sign-in, saying so.
  await signIn(env("TEAM_VIEWER_EMAIL"), shown);
  const refused = await page.getByRole("alert").textContent();
  check(/invalid email or password/.test(refused ?? ""), `the password before the reset is refused (got "${refused}")`);
  await signIn(env("TEAM_VIEWER_EMAIL"), reset);
  await page.getByTestId("must-change-notice").waitFor();
  check((await page.getByRole("link", { name: "Transactions" }).count()) === 0, "a generated password shows Change password alone, no section");
  await axe("change password at first sign-in");
  await shot("first-sign-in-change-password");
  await page.getByLabel("Current password").fill("not the password");
  await page.getByLabel("New password (12 to 256 characters)").fill(env("TEAM_VIEWER_NEW_PASSWORD"));
  await page.getByRole("button", { name: "Change password" }).click();
  const wrong = await page.getByRole("alert").textContent();
  check(/\/current_password: is not your current password/.test(wrong ?? ""), `a wrong current password shows the API's message (got "${wrong}")`);
  await page.getByLabel("Current password").fill(reset);
  await page.getByRole("button", { name: "Change password" }).click();
  await page.getByRole("heading", { name: "Transactions" }).waitFor();
  check(true, "after the change the page opens");
  await page.goto(`${url}/#/transactions/${env("TX_ID")}`);
  await page.getByTestId("tx-status").waitFor();
  check((await page.getByRole("button", { name: "Capture" }).count()) === 0, "the new viewer sees no Capture button");
  check((await page.getByRole("link", { name: "Team" }).count()) === 0, "the new viewer has no Team page");
  await page.getByRole("link", { name: "Vault forwarding" }).click();
  await page.getByRole("heading", { name: "Vault forwarding" }).waitFor();
  check((await page.getByRole("button", { name: "Create config" }).count()) === 0, "the new viewer cannot create a forwarding config");
  await page.getByRole("link", { name: "Change password" }).click();
  await page.getByRole("heading", { name: "Change password" }).waitFor();
  await axe("change password");
  await shot("change-password");
  // Another tab signs out: this page's next session call finds it gone.
  await page.evaluate(async () => {
    const s = await (await fetch("/dashboard/session")).json();
    await fetch("/dashboard/sign-out", { method: "POST", headers: { "X-CSRF-Token": s.csrf_token } });
  });
  await page.getByRole("button", { name: "Change password" }).click();
  const notice = await page.getByTestId("signin-notice").textContent();
  check(/Sign in again/.test(notice ?? ""), `an ended session returns to sign-in with a message (got "${notice}")`);
  await axe("sign-in after the session ended");
  await shot("sign-in-session-ended");

  // --- viewer: no write action, and 403 when forcing one
  await signIn(env("VIEWER_EMAIL"));
  await page.goto(`${url}/#/transactions/${env("TX_ID")}`);
  await page.getByTestId("tx-status").waitFor();
  check((await page.getByRole("button", { name: "Capture" }).count()) === 0, "a viewer sees no Capture button");
  await shot("transaction-viewer");
  await page.getByRole("link", { name: "Payment services" }).click();
  await page.getByRole("list", { name: "Payment services" }).getByRole("listitem").first().waitFor();
  check((await page.getByRole("form", { name: "New payment service" }).count()) === 0 &&
    (await page.getByRole("button", { name: /^(Edit|Deactivate) / }).count()) === 0,
    "a viewer sees no payment service form, edit or deactivate button");
  const forced = await page.evaluate(async (id) => {
    const s = await (await fetch("/dashboard/session")).json();
    const t = await (await fetch("/dashboard/token", { method: "POST", headers: { "X-CSRF-Token": s.csrf_token } })).json();
    const r = await fetch(`/transactions/${id}/void`, {
      method: "POST",
      headers: { Authorization: "Bearer " + t.access_token, "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() },
      body: "{}",
    });
    return r.status;
  }, env("TX_ID"));
  check(forced === 403, `a viewer forcing a void gets 403 (got ${forced})`);
} catch (e) {
  failures.push(String(e?.stack ?? e));
  console.log("FAIL", e);
  await shot("failure").catch(() => undefined);
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
if (failures.length) {
  console.log(`\n${failures.length} failure(s)`);
  process.exit(1);
}
