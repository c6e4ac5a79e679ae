// The VS Code client of timerace-lsp: starts the server (LSP over stdio) for `timerace`
// documents; diagnostics, hover, go-to-definition and completion come from it.
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("timerace").get("server.path", "timerace-lsp");
  if (!command) {
    return; // highlighting only
  }
  const server = { command, args: [] };
  client = new LanguageClient("timerace", "timerace language server",
    { run: server, debug: server },
    { documentSelector: [{ language: "timerace" }] });
  context.subscriptions.push(client);
  client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
