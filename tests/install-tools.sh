#!/usr/bin/env bash
# Installs the outside tools that some exporter tests use, only where missing:
#   - Graphviz (`dot`), which renders the DOT exports to SVG;
#   - the real Mermaid parser (npm packages in tests/mermaid, run by Node.js);
#   - VS Code's TextMate engine (npm packages in tests/textmate), which runs the grammar
#     in editors/vscode over the shipped models;
#   - SPIN, whose state counts the bench tests compare with ours;
#   - Chromium and its WebDriver (chromium-driver), in which Selenium drives the trace
#     explorer (`check --html`).
# As root it installs Debian's graphviz (and Node.js, if absent) with apt-get; otherwise
# it says what is missing, and the tests that need it skip locally (under CI they fail).
# What is installed already is skipped; apt-get waits for the package lock (a fresh cloud
# machine runs its own package manager at boot), up to 10 minutes, instead of failing.
set -euo pipefail
cd "$(dirname "$0")"
missing=()
command -v dot >/dev/null || missing+=(graphviz fonts-liberation2)
command -v spin >/dev/null || missing+=(spin)
{ command -v node >/dev/null && command -v npm >/dev/null; } || missing+=(nodejs npm)
{ command -v chromium >/dev/null || command -v chromium-browser >/dev/null; } || missing+=(chromium fonts-liberation)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "install-tools: apt-get install ${missing[*]}"
    wait_lock=(-o DPkg::Lock::Timeout=600)
    for try in 1 2 3; do  # the lists lock: older apt ignores the timeout there
      apt-get "${wait_lock[@]}" update -qq && break
      echo "install-tools: apt-get update failed (try $try of 3; another package manager?); waiting" >&2
      sleep 20
    done
    # without their recommends (printing, sound, desktop helpers: 120 packages instead of 31);
    # the fonts graphviz recommends are asked for by name, as the SVG exports' text is set in them
    DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install-tools: missing ${missing[*]}; install them to run every test" >&2
  fi
fi
[ ${#missing[@]} -eq 0 ] && echo "install-tools: graphviz, spin, Node.js and Chromium are installed"
if command -v npm >/dev/null; then
  if [ ! -d mermaid/node_modules/mermaid ] || [ mermaid/package-lock.json -nt mermaid/node_modules/.package-lock.json ]; then
    echo "install-tools: npm ci in tests/mermaid"
    (cd mermaid && npm ci --no-audit --no-fund --loglevel=error)
  fi
  if [ ! -d textmate/node_modules/vscode-textmate ] || [ textmate/package-lock.json -nt textmate/node_modules/.package-lock.json ]; then
    echo "install-tools: npm ci in tests/textmate"
    (cd textmate && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
