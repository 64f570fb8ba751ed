// Drives headless Chromium (Debian's /usr/bin/chromium, through puppeteer-core) for tests/sdk_js/test_browser.py:
// for each of N devices (browser contexts, each with its own IndexedDB), load the example page with ?send=0 and tick
// its consent box (unchecked at first) so that it records and queues without delivering, read the client's status,
// reload the page normally and wait until the queue that survived the reload is delivered; then one more device opens two tabs at once. Prints one JSON object
// with what each step saw.
import puppeteer from "puppeteer-core";

const [pageUrl, chromium, devices] = [process.argv[2], process.argv[3], Number(process.argv[4] ?? 3)];
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
const out = { devices: [], console: [], consentAsked: [] };
const recordsShown = () => { // the page writes its records' statuses once they are durable
  const text = document.getElementById("status").textContent;
  return text !== "starting" && text !== "waiting for consent" && text;
};
// the consent box starts unchecked and the page records nothing until it is ticked (then kept in localStorage)
const consentGiven = async (page) => {
  await page.waitForFunction(() => document.getElementById("status").textContent !== "starting");
  const asked = await page.evaluate(() => document.getElementById("status").textContent === "waiting for consent"
    && !document.getElementById("consent").checked && !("telemetry" in window)); // no client, so no request yet
  out.consentAsked.push(asked);
  // a click from the page itself: page.click waits for a frame, which a background tab never draws
  if (asked) await page.evaluate(() => document.getElementById("consent").click());
};
const waitFor = async (page, check, what) => {
  for (let i = 0; i < 600; i++) {
    const value = await page.evaluate(check);
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
};
try {
  for (let d = 0; d < devices; d++) {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    page.on("console", (message) => out.console.push(message.text()));
    page.on("pageerror", (error) => out.console.push(`pageerror: ${error.message}`));
    await page.goto(`${pageUrl}&send=0`);
    await consentGiven(page);
    const recorded = await waitFor(page, recordsShown, "the page's records");
    const before = await page.evaluate(async () => telemetry.status());
    const again = await page.evaluate(async () => (await telemetry.record("browser", "chrome")).status);
    await page.goto(pageUrl); // the reload: a new Client over the same IndexedDB, delivering in the background
    const after = await waitFor(page, async () => {
      const status = await telemetry.status();
      return status.pending === 0 && status.sent > 0 && status;
    }, "the delivery after the reload");
    // the background delivery may finish before the reloaded page's own records do: wait for those too
    const secondVisit = await waitFor(page, recordsShown, "the reloaded page's records");
    out.devices.push({ recorded, before, again, after, secondVisit });
    await context.close();
  }
  // two tabs of one device record at the same moment: the IndexedDB transaction lets only one take the day's report
  const context = await browser.createBrowserContext();
  const tabs = await Promise.all([context.newPage(), context.newPage()]);
  await Promise.all(tabs.map((tab) => tab.goto(`${pageUrl}&send=0`)));
  await Promise.all(tabs.map(consentGiven));
  out.tabs = await Promise.all(tabs.map((tab) => waitFor(tab, recordsShown, "a tab's records")));
  await context.close();
} catch (error) {
  out.error = String(error.stack ?? error);
  process.exitCode = 1;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
