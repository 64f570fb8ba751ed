// Drives headless Chromium (Debian's /usr/bin/chromium, through puppeteer-core) for
// tests/collector/test_dashboard_distributed.py: opens a distributed campaign's page on a leader with the admin key,
// reads its batches table, screenshots it, clicks the collect button of the given batch (the confirmation is
// recorded and accepted), waits for the page to show the release (the batch released, the estimate's n) and
// screenshots that. Prints one JSON object with what each step saw.
import puppeteer from "puppeteer-core";

const [base, chromium, adminKey, campaign, batch, outDir] = process.argv.slice(2);
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
const out = { console: [], dialogs: [] };
const batches = () => ({
  columns: [...document.querySelectorAll("#batches thead th")].map((th) => th.textContent),
  rows: [...document.querySelectorAll("#batches tbody tr")].map((tr) => [...tr.children].map((td) => td.textContent)),
  n: document.getElementById("n") ? document.getElementById("n").dataset.n : null,
  noEstimate: document.getElementById("no-estimate") ? document.getElementById("no-estimate").textContent : null,
  header: [...document.querySelectorAll("#header p")].map((p) => p.textContent),
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1150, height: 900 });
  page.on("pageerror", (error) => out.console.push(`pageerror: ${error.message}`));
  page.on("dialog", async (dialog) => { out.dialogs.push(dialog.message()); await dialog.accept(); });
  await page.goto(`${base}/dashboard/#/campaign/${encodeURIComponent(campaign)}`);
  await page.waitForSelector("#login:not([hidden])");
  await page.type("#key", adminKey);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#batches tbody tr");
  await page.evaluate(() => { window.notReloaded = true; });
  out.before = await page.evaluate(batches);
  await page.screenshot({ path: `${outDir}/dashboard-distributed-batches.png`, fullPage: true });
  const clicked = await page.evaluate((wanted) => {
    const row = [...document.querySelectorAll("#batches tbody tr")].find((tr) => tr.children[0].textContent === wanted);
    const button = row && row.querySelector("button");
    if (!button) return false;
    button.click();
    return true;
  }, batch);
  out.clicked = clicked;
  // collected: the page renders again, now with the release's estimate (before it there was none)
  await page.waitForSelector("#n", { timeout: 300000 });
  out.after = await page.evaluate(batches);
  out.notReloaded = await page.evaluate(() => window.notReloaded === true);
  await page.screenshot({ path: `${outDir}/dashboard-distributed.png`, fullPage: true });
} catch (error) {
  out.error = String(error.stack ?? error);
  out.status = await (await browser.pages()).at(-1).$eval("#status", (node) => node.textContent).catch(() => null);
  process.exitCode = 1;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
