#!/usr/bin/env bash
# Install the coding agents the end-to-end tests drive (Claude Code, Codex CLI) from npm into .tools/agents
# (gitignored). Claude Code ships its native binary in a per-platform package that its install.cjs puts in
# place; npm may skip that postinstall script, so it is run here.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${MODELPORT_AGENTS_DIR:-.tools/agents}"
mkdir -p "$DIR"
echo "==> installing Claude Code and Codex CLI into $DIR"
npm install --no-audit --no-fund --prefix "$DIR" @anthropic-ai/claude-code@latest @openai/codex@latest
(cd "$DIR/node_modules/@anthropic-ai/claude-code" && node install.cjs)
"$DIR/node_modules/@anthropic-ai/claude-code/bin/claude.exe" --version
"$DIR/node_modules/.bin/codex" --version
