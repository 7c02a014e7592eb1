#!/bin/sh
# A CI job driving roundtable without a terminal, as a user's pipeline would:
#   start (autopilot on, a free port) → wait --ready → runs create → the scripted agents plan,
#   implement, review and test on their own → an approval waits for the operator → approve and
#   apply from the CLI → exit 0. Then a run whose harness cannot start ends blocked: exit 3.
# Usage: ci_flow.sh PROJECT BLOCKED_PROJECT   (ROUNDTABLE: the command, default `roundtable`)
set -eu
RT=${ROUNDTABLE:-roundtable}
ROOT=$1
BLOCKED=$2
export CI=true

"$RT" start --root "$ROOT" --autopilot --http-address 127.0.0.1:0 </dev/null >"$ROOT/owner.log" 2>&1 &
OWNER=$!
trap 'kill "$OWNER" 2>/dev/null || true' EXIT
"$RT" wait --ready --timeout 60s --root "$ROOT"
"$RT" runs create --root "$ROOT" --goal "Improve the calculator" --run RUN-ci

# The operator's turn comes when an approval is requested (the autopilot asks once every gate
# but the operator's passes).
deadline=$(( $(date +%s) + 240 ))
while :; do
    waiting=$("$RT" approvals list --root "$ROOT" | awk '$2 == "proposal" { print $1, $3; exit }')
    [ -n "$waiting" ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "no approval was requested within 240s" >&2
        cat "$ROOT/owner.log" >&2
        exit 1
    fi
    sleep 1
done
approval=${waiting% *}
proposal=${waiting#* }
"$RT" approvals approve "$approval" --root "$ROOT" --note "CI: approved"
"$RT" apply "$proposal" --run RUN-ci --root "$ROOT"
"$RT" transactions list --root "$ROOT"
kill "$OWNER"
wait "$OWNER" || true
trap - EXIT

# A run whose harness is not installed: its task is blocked, the run ends blocked, exit 3.
set +e
"$RT" run --root "$BLOCKED" --headless --autopilot --goal "Needs a harness" --json >"$BLOCKED/summary.json"
code=$?
set -e
if [ "$code" -ne 3 ]; then
    echo "the blocked run exited $code, not 3" >&2
    exit 1
fi
echo "ci flow: applied $proposal; the blocked run exited 3"
