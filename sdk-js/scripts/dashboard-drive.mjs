// Drives headless Chromium (Debian's /usr/bin/chromium, through puppeteer-core) for
// tests/collector/test_dashboard_browser.py: opens the collector's dashboard, tries a refused key, then the admin key;
// reads what the campaign list and a campaign's page show; posts more reports (a JSON file of ready-made reports,
// with an ingest key) while the page stays open and waits for the page to show them without a reload; submits a
// bad spec on the new-campaign page. Writes a screenshot of each page into the output folder and prints one JSON
// object with what each step saw.
import puppeteer from "puppeteer-core";
import { readFileSync } from "node:fs";

const [base, chromium, adminKey, ingestKey, reportsFile, campaign, outDir] = process.argv.slice(2);
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
const out = { console: [], dialogs: [] };
const cells = (id) => [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) =>
  [...tr.children].map((td) => td.textContent));
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1150, height: 900 });
  page.on("console", (message) => out.console.push(message.text()));
  page.on("pageerror", (error) => out.console.push(`pageerror: ${error.message}`));
  page.on("dialog", async (dialog) => { out.dialogs.push(dialog.message()); await dialog.accept(); });
  const response = await page.goto(`${base}/dashboard/`);
  out.csp = response.headers()["content-security-policy"];
  await page.waitForSelector("#login:not([hidden])");
  // a refused key: the page says so and asks again
  await page.type("#key", "ldp_not-a-key");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.getElementById("status").className === "error");
  out.refused = await page.$eval("#status", (node) => node.textContent);
  await page.screenshot({ path: `${outDir}/dashboard-refused.png` });
  out.urlAfterKey = page.url();
  out.cookies = (await page.cookies()).length;
  // the admin key, typed once; the list
  await page.type("#key", adminKey);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#campaigns tbody tr");
  out.list = await page.evaluate(cells, "campaigns");
  out.listUrl = page.url();
  await page.screenshot({ path: `${outDir}/dashboard-campaigns.png`, fullPage: true });
  // keyboard: tab to the campaign's link and follow it
  let focused = "";
  for (let i = 0; i < 30 && focused !== campaign; i++) {
    await page.keyboard.press("Tab");
    focused = await page.evaluate(() => document.activeElement.tagName === "A" ? document.activeElement.textContent : "");
  }
  out.keyboardReached = focused === campaign;
  await page.keyboard.press("Enter");
  await page.waitForSelector("#n");
  await page.evaluate(() => { window.notReloaded = true; });
  const read = () => ({
    n: document.getElementById("n").dataset.n,
    header: [...document.querySelectorAll("#header p")].map((p) => p.textContent),
    table: [...document.querySelectorAll("#table-0 tbody tr")].map((tr) => [...tr.children].map((td) => td.textContent)),
    central: [...document.querySelectorAll("#central tbody td")].map((td) => td.textContent),
    planner: [...document.querySelectorAll("#planner tbody tr")].map((tr) => [...tr.children].map((td) => td.textContent)),
    images: document.querySelectorAll("main img").length,
    svgs: document.querySelectorAll("main svg[role=img]").length,
    axisLabels: [...document.querySelectorAll("main svg[role=img] text")].map((t) => t.textContent),
    alerted: window.alerted === true,
  });
  await page.evaluate(() => { window.alert = () => { window.alerted = true; }; });
  out.before = await page.evaluate(read);
  await page.screenshot({ path: `${outDir}/dashboard-campaign.png`, fullPage: true });
  // more reports arrive: the page shows them without a reload
  const posted = await fetch(`${base}/v1/reports`, { method: "POST", headers: { Authorization: `Bearer ${ingestKey}`,
    "Content-Type": "application/json" }, body: readFileSync(reportsFile, "utf-8") });
  out.posted = (await posted.json()).accepted;
  await page.waitForFunction((n) => document.getElementById("n") && document.getElementById("n").dataset.n !== n,
    { timeout: 60000 }, out.before.n);
  out.after = await page.evaluate(read);
  out.notReloaded = await page.evaluate(() => window.notReloaded === true);
  out.storedKey = await page.evaluate(() => sessionStorage.getItem("ldpAdminKey") !== null);
  out.localStorage = await page.evaluate(() => localStorage.length);
  // the new-campaign form: the API's problem names the field, shown beside it
  await page.goto(`${base}/dashboard/#/new`);
  await page.waitForSelector("#spec");
  await page.$eval("#spec", (node) => { node.value = JSON.stringify({ name: "bad", mechanism: "oue", epsilon: -1,
    domain: ["a", "b"] }); });
  await page.click("#create button[type=submit]");
  await page.waitForFunction(() => document.getElementById("spec-error").textContent !== "");
  out.specError = await page.$eval("#spec-error", (node) => ({ text: node.textContent, field: node.dataset.field }));
  await page.screenshot({ path: `${outDir}/dashboard-new-campaign.png`, fullPage: true });
} catch (error) {
  out.error = String(error.stack ?? error);
  process.exitCode = 1;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
