// Parse Mermaid files with the real Mermaid parser (no browser: jsdom stands in for
// the DOM that mermaid's module expects). Prints one line per file; exit 1 if any
// file is rejected, 2 on bad usage.
import { JSDOM } from "jsdom";
import { readFileSync } from "node:fs";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node parse.mjs FILE.mmd...");
  process.exit(2);
}
const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

let rejected = 0;
for (const file of files) {
  try {
    const result = await mermaid.parse(readFileSync(file, "utf8"));
    console.log(`ok ${file} ${result.diagramType}`);
  } catch (e) {
    rejected++;
    console.log(`rejected ${file}: ${String(e.message || e).split("\n").join(" | ")}`);
  }
}
process.exit(rejected ? 1 : 0);
