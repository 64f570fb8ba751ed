// The browser bundle (dist/browser/): ldp-telemetry.min.js, one minified ES module for <script type="module">
// without a build step, and the randomizers loaded on demand (rappor.js, numeric.js), which import what they share
// with it (the mechanism registry, sampling, helpers) from it under short export names. test/bundle.test.mjs holds
// the main module to 12 KB gzipped. vdaf.js, the Prio3 sharder of distributed campaigns (with TurboSHAKE128 from
// @noble/hashes), is self-contained: a page of local campaigns never loads it.
import { join, relative, resolve } from "node:path";
import { build } from "esbuild";

const common = { bundle: true, minify: true, format: "esm", platform: "browser", target: ["es2022"],
  legalComments: "none", logLevel: "warning" };
const MAIN = "./ldp-telemetry.min.js";
const SHARED = {
  "./mechanisms.js": ["bitsToHex", "registerMechanism"],
  "./hash.js": ["fromHex", "toHex", "utf8"],
  "./randomness.js": ["quantizeDown", "quantizeUp", "quantizeRatio", "randomWords", "threshold", "bernoulli", "expRounded", "fromDouble",
    "randbelow", "randbits", "rational", "uniformUnit"],
  "./errors.js": ["InvalidValueType", "SpecError", "ValueNotInDomain", "LDPError", "UnsupportedSpec"],
  "./spec.js": ["registerRapporSupport", "registerSpecParser", "Spec", "forbid", "validateDomain", "MIN_EPSILON",
    "MAX_EPSILON"],
};
const alias = new Map(Object.values(SHARED).flat().map((name, i) => [name, `$${i}`]));

// The main module: the public API, plus the shared names for the modules loaded on demand (not a public API)
const entry = [`export * from "./src/index.ts";`, ...Object.entries(SHARED).map(([path, names]) =>
  `export { ${names.map((n) => `${n} as ${alias.get(n)}`).join(", ")} } from "./src/${path.slice(2, -3)}.ts";`)];
// Properties only the categorical randomizers use (never read by an app or by the modules loaded on demand)
const mangleProps = /^(otherBitOne|trueBitOne|keep|perturbIndex|pStar|qStar|claimed)$/;
await build({ ...common, stdin: { contents: entry.join("\n"), resolveDir: ".", loader: "ts" },
  outfile: "dist/browser/ldp-telemetry.min.js", mangleProps });

// The modules loaded on demand: rappor.js, numeric.js and distributed.js (which loads vdaf.js, the Prio3 sharder)
const SRC = resolve("src");
for (const name of ["rappor", "numeric", "distributed"]) {
  await build({
    ...common,
    entryPoints: [`src/${name}.ts`],
    outfile: `dist/browser/${name}.js`,
    plugins: [{
      name: "shared-from-main",
      setup(b) {
        // a module of the main bundle, imported from src/ or a folder under it, is taken from the main module
        b.onResolve({ filter: /\.js$/ }, (args) => {
          const file = resolve(args.resolveDir, args.path);
          if (file === join(SRC, "vdaf", "index.js")) return { path: "./vdaf.js", external: true };
          const shared = `./${relative(SRC, file)}`;
          return SHARED[shared] ? { path: shared, namespace: "shared" } : undefined;
        });
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
