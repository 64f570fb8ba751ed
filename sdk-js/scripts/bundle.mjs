// The browser bundle (dist/browser/): ldp-telemetry.min.js, one minified ES module for <script type="module">
// without a build step, and the randomizers loaded on demand (rappor.js, numeric.js), which import what they share
// with it (the mechanism registry, sampling, helpers) from it under short export names. test/bundle.test.mjs holds
// the main module to 12 KB gzipped. vdaf.js, the Prio3 sharder of distributed campaigns (with TurboSHAKE128 from
// @noble/hashes), is self-contained: a page of local campaigns never loads it.
import { build } from "esbuild";

const common = { bundle: true, minify: true, format: "esm", platform: "browser", target: ["es2022"],
  legalComments: "none", logLevel: "warning" };
const MAIN = "./ldp-telemetry.min.js";
const SHARED = {
  "./mechanisms.js": ["bitsToHex", "registerMechanism"],
  "./hash.js": ["fromHex", "toHex", "utf8"],
  "./randomness.js": ["quantizeDown", "quantizeUp", "randomWords", "threshold", "bernoulli", "expRounded", "fromDouble",
    "randbelow", "randbits", "rational", "uniformUnit"],
  "./errors.js": ["InvalidValueType", "SpecError", "ValueNotInDomain"],
  "./spec.js": ["registerRapporSupport"],
};
const alias = new Map(Object.values(SHARED).flat().map((name, i) => [name, `$${i}`]));

// The main module: the public API, plus the shared names for the modules loaded on demand (not a public API)
const entry = [`export * from "./src/index.ts";`, ...Object.entries(SHARED).map(([path, names]) =>
  `export { ${names.map((n) => `${n} as ${alias.get(n)}`).join(", ")} } from "./src/${path.slice(2, -3)}.ts";`)];
// Properties only the categorical randomizers use (never read by an app or by the modules loaded on demand)
const mangleProps = /^(otherBitOne|trueBitOne|keep|perturbIndex|pStar|qStar|claimed)$/;
await build({ ...common, stdin: { contents: entry.join("\n"), resolveDir: ".", loader: "ts" },
  outfile: "dist/browser/ldp-telemetry.min.js", mangleProps });

for (const name of ["rappor", "numeric"]) {
  await build({
    ...common,
    entryPoints: [`src/${name}.ts`],
    outfile: `dist/browser/${name}.js`,
    plugins: [{
      name: "shared-from-main",
      setup(b) {
        const filter = new RegExp(`^(${Object.keys(SHARED).map((p) => p.replace(/\./g, "\\.")).join("|")})$`);
        b.onResolve({ filter }, (args) => ({ path: args.path, namespace: "shared" }));
        b.onLoad({ filter: /.*/, namespace: "shared" }, (args) => ({
          contents: `export { ${SHARED[args.path].map((n) => `${alias.get(n)} as ${n}`).join(", ")} } from "${MAIN}";`,
          loader: "js",
        }));
        b.onResolve({ filter: /^\.\/ldp-telemetry\.min\.js$/ }, () => ({ path: MAIN, external: true }));
      },
    }],
  });
}

await build({ ...common, entryPoints: ["src/vdaf/index.ts"], outfile: "dist/browser/vdaf.js" });
