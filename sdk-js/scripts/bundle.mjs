// The browser bundle (dist/browser/): ldp-telemetry.min.js, one minified ES module for <script type="module">
// without a build step (the client, the store, the spec's envelope and the kind registry), and the modules loaded on
// demand, which import what they share with it (registries, sampling, helpers) from it under short export names:
// the kinds (local.js: the local kind with the categorical randomizers; prio3.js: distributed campaigns, which loads
// vdaf.js) and the local kind's other randomizers (rappor.js, numeric.js). test/bundle.test.mjs holds the main
// module to 12 KB gzipped, and the main module with local.js (what a page of local campaigns loads) to the figure it
// names. vdaf.js, the Prio3 sharder (with TurboSHAKE128 from @noble/hashes), is self-contained.
import { join, relative, resolve } from "node:path";
import { readFileSync, rmSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist/browser", { recursive: true, force: true }); // no module of an earlier layout left beside the new ones
const common = { bundle: true, minify: true, format: "esm", platform: "browser", target: ["es2022"],
  legalComments: "none", logLevel: "warning" };
const MAIN = "./ldp-telemetry.min.js";
// The shared names, by the module of the main bundle they come from: exactly what the modules loaded on demand import
// from those modules (the build fails on a name missing here, and on a name no module imports)
const SHARED = {
  "./client.js": ["loadMechanism"],
  "./mechanisms.js": ["registerMechanism", "localMechanism", "isLoaded"],
  "./kinds/index.js": ["provideKind", "notLoaded", "loadKind", "loadedKind"],
  "./hash.js": ["bitsToHex", "fromHex", "toHex", "utf8"],
  "./canonical.js": ["PyFloat", "canonicalJson"],
  "./randomness.js": ["quantizeDown", "quantizeUp", "quantizeRatio", "randomWords", "threshold", "bernoulli", "expRounded",
    "fromDouble", "randbelow", "randbits", "rational", "uniformUnit", "bernoulliMany", "bitLength", "randbelowNumber",
    "toNumber"],
  "./errors.js": ["InvalidValue", "InvalidValueType", "SpecError", "ValueNotInDomain", "LDPError", "UnsupportedSpec"],
  "./spec.js": ["registerRappor", "Spec", "forbid", "validateDomain", "MIN_EPSILON", "MAX_EPSILON", "CATEGORICAL_MECHANISMS",
    "NUMERIC_MECHANISMS", "rapporParser", "text"],
};
const alias = new Map(Object.values(SHARED).flat().map((name, i) => [name, `$${i}`]));

// The main module: the public API, plus the shared names for the modules loaded on demand (not a public API)
const entry = [`export * from "./src/index.ts";`, ...Object.entries(SHARED).map(([path, names]) =>
  `export { ${names.map((n) => `${n} as ${alias.get(n)}`).join(", ")} } from "./src/${path.slice(2, -3)}.ts";`)];
// Properties only the categorical randomizers use (never read by an app or by the modules loaded on demand)
const mangleProps = /^(otherBitOne|trueBitOne|keep|perturbIndex|pStar|qStar|claimed)$/;
// the kinds' loaders, import("./local.js") and import("./prio3.js"), stay imports of the modules beside it
const kindsOnDemand = { name: "kinds-on-demand", setup(b) {
  b.onResolve({ filter: /^\.\/\w+\.js$/ }, (args) => (args.kind === "dynamic-import" ? { path: args.path, external: true } : undefined));
} };
await build({ ...common, stdin: { contents: entry.join("\n"), resolveDir: ".", loader: "ts" },
  outfile: "dist/browser/ldp-telemetry.min.js", mangleProps, plugins: [kindsOnDemand] });

/** The names (values, not types) that the module ``file`` imports from ``specifier``. */
function importedNames(file, specifier) {
  const names = [];
  const quoted = specifier.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  for (const [, list] of readFileSync(file, "utf8").matchAll(new RegExp(`import\\s*\\{([^}]*)\\}\\s*from\\s*["']${quoted}["']`, "g"))) {
    for (const entry of list.split(",").map((e) => e.trim())) {
      if (entry && !entry.startsWith("type ")) names.push(entry.split(/\s+as\s+/)[0]);
    }
  }
  return names;
}

// The modules loaded on demand: the kinds (local.js, prio3.js, which loads vdaf.js, heavy_hitters.js, quantiles.js,
// repeated.js), rappor.js and numeric.js
const SRC = resolve("src");
const imported = new Set();
for (const source of ["kinds/local", "kinds/prio3", "kinds/poplar1", "kinds/heavy_hitters", "kinds/quantiles", "kinds/repeated", "rappor",
  "numeric"]) {
  await build({
    ...common,
    entryPoints: [`src/${source}.ts`],
    outfile: `dist/browser/${source.replace("kinds/", "")}.js`,
    mangleProps,
    plugins: [{
      name: "shared-from-main",
      setup(b) {
        // a module of the main bundle, imported from src/ or a folder under it, is taken from the main module
        b.onResolve({ filter: /\.js$/ }, (args) => {
          const file = resolve(args.resolveDir, args.path);
          if (file === join(SRC, "vdaf", "index.js")) return { path: "./vdaf.js", external: true };
          const shared = `./${relative(SRC, file)}`;
          if (!SHARED[shared]) return undefined;
          // one stand-in per importing module, with the names it imports only (esbuild keeps every name a stand-in
          // re-exports from the main module in the chunk's import list, used or not)
          const names = importedNames(args.importer, args.path);
          for (const name of names) {
            if (!SHARED[shared].includes(name)) throw new Error(`${args.importer}: ${name} (${shared}) is not in SHARED`);
            imported.add(name);
          }
          return { path: `${shared}?${relative(SRC, args.importer)}`, namespace: "shared", pluginData: { names } };
        });
        b.onLoad({ filter: /.*/, namespace: "shared" }, (args) => ({
          contents: `export { ${args.pluginData.names.map((n) => `${alias.get(n)} as ${n}`).join(", ")} } from "${MAIN}";`,
          loader: "js",
        }));
        b.onResolve({ filter: /^\.\/ldp-telemetry\.min\.js$/ }, () => ({ path: MAIN, external: true }));
      },
    }],
  });
}

const dead = [...alias.keys()].filter((name) => !imported.has(name));
if (dead.length) throw new Error(`shared names no module loaded on demand imports: ${dead}`);

await build({ ...common, entryPoints: ["src/vdaf/index.ts"], outfile: "dist/browser/vdaf.js" });
