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

async function axe(name) {
  await page.addScriptTag({ path: axePath });
  const res = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ["violations"] }));
  const v = res.violations.map((x) => `${x.id} (${x.nodes.length}): ${x.help}`);
  check(v.length === 0, `axe: no violations on ${name}${v.length ? ": " + v.join("; ") : ""}`);
}
async function shot(name) {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
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

  // --- webhook subscriptions: deliveries with a retry, a new one whose
  // secret is shown once, a rotation
  await page.getByRole("link", { name: "Webhooks" }).click();
  const hooksURL = env("HOOKS_URL");
  await page.getByRole("button", { name: `Deliveries of ${hooksURL}` }).click();
  const deliveries = page.getByRole("list", { name: `Deliveries of ${hooksURL}` });
  await deliveries.getByRole("listitem").first().waitFor();
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

  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("button", { name: "Sign in" }).waitFor();

  // --- the new viewer signs in with the shown password: no Team page, no
  // write action; changes their password; a session ended elsewhere
  // returns the page to sign-in, saying so.
  await signIn(env("TEAM_VIEWER_EMAIL"), shown);
  await page.goto(`${url}/#/transactions/${env("TX_ID")}`);
  await page.getByTestId("tx-status").waitFor();
  check((await page.getByRole("button", { name: "Capture" }).count()) === 0, "the new viewer sees no Capture button");
  check((await page.getByRole("link", { name: "Team" }).count()) === 0, "the new viewer has no Team page");
  await page.getByRole("link", { name: "Vault forwarding" }).click();
  await page.getByRole("heading", { name: "Vault forwarding" }).waitFor();
  check((await page.getByRole("button", { name: "Create config" }).count()) === 0, "the new viewer cannot create a forwarding config");
  await page.getByRole("link", { name: "Change password" }).click();
  await page.getByLabel("Current password").fill("not the password");
  await page.getByLabel("New password (12 to 256 characters)").fill(env("TEAM_VIEWER_NEW_PASSWORD"));
  await page.getByRole("button", { name: "Change password" }).click();
  const wrong = await page.getByRole("alert").textContent();
  check(/current_password is not your current password/.test(wrong ?? ""), `a wrong current password shows the API's message (got "${wrong}")`);
  await page.getByLabel("Current password").fill(shown);
  await page.getByRole("button", { name: "Change password" }).click();
  await page.getByRole("status").filter({ hasText: "Password changed" }).waitFor();
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
