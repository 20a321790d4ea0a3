// Builds dist/app.js from src/ with esbuild; with --check, builds in
// memory and fails when the committed dist/app.js differs (make test).
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";

const out = "dist/app.js";
const res = await build({
  entryPoints: ["src/main.tsx"],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2020",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  write: false,
  outfile: out,
  logLevel: "warning",
});
const built = res.outputFiles[0].contents;
if (process.argv.includes("--check")) {
  let committed = Buffer.alloc(0);
  try {
    committed = readFileSync(out);
  } catch {}
  if (!Buffer.from(built).equals(committed)) {
    console.error(`core-api/dashboard/web/${out} is not the build of src/: run make dashboard-build and commit it`);
    process.exit(1);
  }
  console.log(`${out} is up to date`);
} else {
  writeFileSync(out, built);
  console.log(`wrote ${out} (${built.length} bytes)`);
}
