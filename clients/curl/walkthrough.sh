#!/usr/bin/env bash
# walkthrough.sh: runbox's REST API with nothing but curl. Each step prints the command and the
# answer. Needs a running runboxd (scripts/run) and curl; uses no jq (ids are cut out with sed).
#
# Usage: clients/curl/walkthrough.sh [BASE_URL]   (default http://127.0.0.1:8080, or $RUNBOX_URL)
set -euo pipefail

URL=${1:-${RUNBOX_URL:-http://127.0.0.1:8080}}
JSON=(-H 'Content-Type: application/json')

step() { printf '\n### %s\n' "$*"; }
show() { # prints the curl command line, runs it, prints the answer
    printf '$ curl %s\n' "$*"
    curl -sS --fail-with-body "$@"
    echo
}
field() { # field NAME JSON: the first "NAME":"value" string in JSON
    sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p" <<<"$2" | head -n1
}

step "1. Health"
show "$URL/health"

step "2. Create a Python session (answers once the sandbox is ready)"
printf '$ curl -X POST %s/sessions -d {...}\n' "$URL"
SESSION=$(curl -sS --fail-with-body -X POST "${JSON[@]}" "$URL/sessions" \
    -d '{"language": "python", "execution_options": {"timeout": 30, "memory_limit": "512m"}}')
echo "$SESSION"
SID=$(field session_id "$SESSION")
[ -n "$SID" ] || { echo "no session_id in the answer" >&2; exit 1; }

step "3. Execute and wait for the result"
show -X POST "${JSON[@]}" "$URL/execute" \
    -d "{\"session_id\": \"$SID\", \"code\": \"x = 6 * 7\\nprint('x is', x)\\nx\", \"wait\": true}"

step "4. Execute asynchronously (202), then poll status and read the results"
printf '$ curl -X POST %s/execute -d {...}\n' "$URL"
QUEUED=$(curl -sS --fail-with-body -X POST "${JSON[@]}" "$URL/execute" \
    -d "{\"session_id\": \"$SID\", \"code\": \"import time\\nfor i in range(3):\\n    print(i, flush=True)\\n    time.sleep(0.5)\"}")
echo "$QUEUED"
RID=$(field request_id "$QUEUED")
for _ in $(seq 1 120); do
    STATUS=$(curl -sS --fail-with-body "$URL/execute/$RID/status")
    case $(field status "$STATUS") in
    completed | error | timeout | cancelled) break ;;
    esac
    sleep 0.5
done
show "$URL/execute/$RID/status"
show "$URL/execute/$RID/results"

step "5. Follow an execution as Server-Sent Events (curl -N)"
QUEUED=$(curl -sS --fail-with-body -X POST "${JSON[@]}" "$URL/execute" \
    -d "{\"session_id\": \"$SID\", \"code\": \"import time\\nfor i in range(3):\\n    print('tick', i, flush=True)\\n    time.sleep(0.3)\"}")
RID=$(field request_id "$QUEUED")
show -N "$URL/execute/$RID/events"

step "6. Interrupt a running execution"
QUEUED=$(curl -sS --fail-with-body -X POST "${JSON[@]}" "$URL/execute" \
    -d "{\"session_id\": \"$SID\", \"code\": \"import time\\nwhile True:\\n    time.sleep(0.1)\"}")
RID=$(field request_id "$QUEUED")
for _ in $(seq 1 120); do
    [ "$(field status "$(curl -sS "$URL/execute/$RID/status")")" = running ] && break
    sleep 0.25
done
show -X DELETE "$URL/execute/$RID"
for _ in $(seq 1 120); do
    [ "$(field status "$(curl -sS "$URL/execute/$RID/status")")" = cancelled ] && break
    sleep 0.25
done
show "$URL/execute/$RID/status"
echo "# the variables survive the interrupt:"
show -X POST "${JSON[@]}" "$URL/execute" -d "{\"session_id\": \"$SID\", \"code\": \"x\", \"wait\": true}"

step "7. An error answer"
printf '$ curl %s/sessions/s_00000000000000000000000000000000\n' "$URL"
curl -sS "$URL/sessions/s_00000000000000000000000000000000"
echo

step "8. Delete the session (its container is removed)"
show -X DELETE "$URL/sessions/$SID"
