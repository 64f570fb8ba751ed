// Drives headless Chromium (Debian's chromium through puppeteer-core) for tests/sdk_js/test_browser_distributed.py:
// N browser contexts, each loading the page (examples/web/distributed.html, or the test's own; "{device}" in its URL
// becomes the context's index), which records into a distributed campaign, delivers to the leader and writes its
// outcome in #status. Prints {"devices": [page status, ...], "console": [...], "loaded": [...]}.
import puppeteer from "puppeteer-core";

const [pageUrl, chromium, devices] = [process.argv[2], process.argv[3], Number(process.argv[4] ?? 3)];
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
const out = { devices: [], console: [], loaded: [] };
try {
  for (let d = 0; d < devices; d++) {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    page.on("console", (message) => out.console.push(message.text()));
    page.on("pageerror", (error) => out.console.push(`pageerror: ${error.message}`));
    page.on("request", (request) => out.loaded.push(new URL(request.url()).pathname));
    await page.goto(pageUrl.replace("{device}", String(d)));
    let status = "starting";
    for (let i = 0; i < 3000 && status === "starting"; i++) { // up to 5 minutes a page
      status = await page.evaluate(() => document.getElementById("status").textContent);
      if (status === "starting") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    out.devices.push(status);
    await context.close();
  }
} catch (error) {
  out.error = String(error.stack ?? error);
  process.exitCode = 1;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
