// Drives headless Chromium (Debian's /usr/bin/chromium, through puppeteer-core) for
// tests/collector/test_dashboard_unreachable.py: opens a campaign's dashboard page with the admin key and reads its
// rejections table, then, told on stdin, waits for the page to say the collector is unreachable (the test stopped
// it) and for the page to recover (the test started a collector on the same port). Prints one JSON line per step
// ({"step": ...}) for the test to act on; a screenshot of the unreachable page goes into the output folder.
import puppeteer from "puppeteer-core";
import { createInterface } from "node:readline";

const [base, chromium, adminKey, campaign, outDir] = process.argv.slice(2);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (object) => process.stdout.write(JSON.stringify(object) + "\n");
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
const out = { step: "done", console: [] };
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1150, height: 900 });
  page.on("pageerror", (error) => out.console.push(`pageerror: ${error.message}`));
  await page.goto(`${base}/dashboard/#/campaign/${encodeURIComponent(campaign)}`);
  await page.waitForSelector("#login:not([hidden])");
  await page.type("#key", adminKey);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#rejections");
  await page.evaluate(() => { window.notReloaded = true; });
  const rejections = await page.evaluate(() => [...document.querySelectorAll("#rejections tbody tr")].map((tr) =>
    [...tr.children].map((td) => td.textContent)));
  say({ step: "open", rejections });
  await lines.next(); // the test has stopped the collector
  await page.waitForFunction(() => document.getElementById("status").className === "error" &&
    document.getElementById("status").textContent.includes("unreachable"), { timeout: 120000 });
  const unreachable = await page.$eval("#status", (node) => node.textContent);
  await page.screenshot({ path: `${outDir}/dashboard-unreachable.png`, fullPage: true });
  say({ step: "unreachable", text: unreachable });
  await lines.next(); // a collector serves on the same port again
  await page.waitForFunction(() => document.getElementById("status").className !== "error" &&
    document.getElementById("status").textContent.startsWith("updated") && document.getElementById("n") !== null,
  { timeout: 120000 });
  out.recovered = await page.$eval("#status", (node) => node.textContent);
  out.n = await page.$eval("#n", (node) => node.dataset.n);
  out.notReloaded = await page.evaluate(() => window.notReloaded === true);
  out.loginHidden = await page.$eval("#login", (node) => node.hidden);
} catch (error) {
  out.error = String(error.stack ?? error);
  process.exitCode = 1;
} finally {
  await browser.close();
}
say(out);
process.exit();
