// Tokenize files with VS Code's TextMate engine (vscode-textmate on the Oniguruma
// regex library compiled to WebAssembly, as the editor runs it). Prints JSON:
// {"FILE": [[[start, end, [scope, ...]], ...] per line], ...}; exit 2 on bad usage,
// 1 when the grammar does not load or a regex does not compile.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const vsctm = require("vscode-textmate");
const onig = require("vscode-oniguruma");

const [grammarPath, ...files] = process.argv.slice(2);
if (!grammarPath || files.length === 0) {
  console.error("usage: node tokenize.mjs GRAMMAR.tmLanguage.json FILE...");
  process.exit(2);
}
await onig.loadWASM(readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer);
const raw = vsctm.parseRawGrammar(readFileSync(grammarPath, "utf8"), grammarPath);
const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (patterns) => new onig.OnigScanner(patterns),
    createOnigString: (s) => new onig.OnigString(s),
  }),
  loadGrammar: async (scopeName) => (scopeName === raw.scopeName ? raw : null),
});
const grammar = await registry.loadGrammar(raw.scopeName);
if (!grammar) {
  console.error(`grammar ${grammarPath} did not load`);
  process.exit(1);
}
const out = {};
for (const file of files) {
  let stack = vsctm.INITIAL;
  out[file] = readFileSync(file, "utf8").split(/\r?\n/).map((line) => {
    const r = grammar.tokenizeLine(line, stack);
    stack = r.ruleStack;
    return r.tokens.map((t) => [t.startIndex, Math.min(t.endIndex, line.length), t.scopes]);
  });
}
process.stdout.write(JSON.stringify(out));
