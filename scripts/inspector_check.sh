#!/usr/bin/env bash
# Drive `remem serve` with the MCP Inspector CLI (npm @modelcontextprotocol/inspector), over
# stdio and over streamable HTTP: list the tools, call recall, read a resource.
# Needs node/npx and network access for npx the first time; CI does not run it.
# Usage: scripts/inspector_check.sh            (uses a throwaway REMEM_HOME)
set -euo pipefail

PY=${PYTHON:-python}
INSPECTOR=${INSPECTOR:-@modelcontextprotocol/inspector}
export REMEM_HOME=$(mktemp -d)
export REMEM_TOKEN=
trap 'rm -rf "$REMEM_HOME"; [[ -n "${SERVER_PID:-}" ]] && kill "$SERVER_PID" 2>/dev/null || true' EXIT

fail=0
check() {  # check NAME EXPECTED_MIN COUNT
  if (( $3 >= $2 )); then echo "PASS  $1 ($3)"; else echo "FAIL  $1 (got $3, want >= $2)"; fail=1; fi
}
inspect() { npx -y "$INSPECTOR" --cli "$@" 2>&1; }

$PY -m remem remember "the staging deploy needs AWS_PROFILE=staging-admin" --kind environment >/dev/null

out=$(inspect $PY -m remem serve --method tools/list)
check "stdio tools/list lists 11 tools" 11 "$(grep -c '"name"' <<<"$out" || true)"
out=$(inspect $PY -m remem serve --method tools/call --tool-name recall --tool-arg "query=which AWS profile for staging")
check "stdio tools/call recall finds the memory" 1 "$(grep -c 'staging-admin' <<<"$out" || true)"
out=$(inspect $PY -m remem serve --method tools/call --tool-name recall --tool-arg k=0)
check "stdio tools/call recall with bad arguments is a tool error" 1 "$(grep -c 'invalid arguments' <<<"$out" || true)"

PORT=${PORT:-$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
$PY -m remem serve --http --port "$PORT" 2>"$REMEM_HOME/http.err" &
SERVER_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/memory/health" >/dev/null && break; sleep 0.2; done
URL="http://127.0.0.1:$PORT/mcp"
out=$(inspect "$URL" --transport http --method tools/list)
check "http tools/list lists 11 tools" 11 "$(grep -c '"name"' <<<"$out" || true)"
out=$(inspect "$URL" --transport http --method tools/call --tool-name recall --tool-arg "query=staging deploy profile")
check "http tools/call recall finds the memory" 1 "$(grep -c 'staging-admin' <<<"$out" || true)"
out=$(inspect "$URL" --transport http --method resources/read --uri remem://morning)
check "http resources/read remem://morning" 1 "$(grep -c 'remem://morning' <<<"$out" || true)"

exit $fail
