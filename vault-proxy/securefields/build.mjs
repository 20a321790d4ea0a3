// Builds the package into dist/ (or, with --check, into a temporary
// directory and compares it with dist/: make test fails when the committed
// build is not what the sources build). The output is deterministic: no
// timestamps, no minification-dependent names, files in a fixed order.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const check = process.argv.includes("--check");
const dist = join(here, "dist");
const out = check ? mkdtempSync(join(tmpdir(), "securefields-")) : dist;
const pkg = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));

if (!check) rmSync(dist, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const common = { bundle: true, format: "iife", target: "es2020", platform: "browser", legalComments: "none", charset: "utf8",
  banner: { js: `/* ${pkg.name} ${pkg.version} */` }, logLevel: "warning" };
await build({ ...common, entryPoints: [join(here, "src/loader.ts")], outfile: join(out, "securefields.js") });
await build({ ...common, entryPoints: [join(here, "src/field.ts")], outfile: join(out, "field.js") });
cpSync(join(here, "static"), out, { recursive: true });

const sri = (f) => "sha384-" + createHash("sha384").update(readFileSync(join(out, f))).digest("base64");
writeFileSync(join(out, "integrity.json"), JSON.stringify({ version: pkg.version, "securefields.js": sri("securefields.js") }, null, 2) + "\n");

function files(dir, base = "") {
  return readdirSync(join(dir, base)).sort().flatMap((n) => {
    const rel = join(base, n);
    return statSync(join(dir, rel)).isDirectory() ? files(dir, rel) : [rel];
  });
}

if (check) {
  const want = files(out), got = files(dist);
  const diff = [...new Set([...want, ...got])].filter((f) => !want.includes(f) || !got.includes(f) ||
    !readFileSync(join(out, f)).equals(readFileSync(join(dist, f))));
  rmSync(out, { recursive: true, force: true });
  if (diff.length > 0) {
    console.error(`dist/ is not what the sources build (differs: ${diff.join(", ")}); run: npm run build (in vault-proxy/securefields) and commit dist/`);
    process.exit(1);
  }
  console.log("dist/ is up to date");
}
