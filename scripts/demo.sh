#!/usr/bin/env bash
# bl demo: 8 agents work through a 30-card backlog in a throwaway git repo;
# one of them crashes mid-card and its lease is taken over after it expires.
# The result is checked against the ledger.
#
# usage: scripts/demo.sh path/to/bl        (KEEP=1 keeps the demo repo)
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 path/to/bl" >&2
  exit 2
fi
if [ ! -x "$1" ] || [ -d "$1" ]; then
  echo "demo: $1 is not an executable bl binary (run make build)" >&2
  exit 2
fi
BL=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
AGENT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/demo-agent.sh

NAGENTS=8
CRASHER=agent-3
TTL=3s
DEADLINE=90 # seconds before the demo gives up on the agents

work=$(mktemp -d "${TMPDIR:-/tmp}/bl-demo.XXXXXX")
repo=$work/repo
logs=$work/logs
pids=()

cleanup() {
  local pid f
  if [ "${#pids[@]}" -gt 0 ]; then # agents still running: stop them
    for f in "$logs"/agent-*.pid; do
      [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
      kill "$pid" 2>/dev/null || true
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then
    echo "kept: $repo (agent logs in $logs)"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

section() { printf '\n== %s\n' "$*"; }
fail() {
  echo "demo FAILED: $*" >&2
  [ "${KEEP:-0}" = 1 ] || echo "(run again with KEEP=1 to keep the repo for a look)" >&2
  exit 1
}

# field NAME: first '"NAME": value' in the indented JSON on stdin, quotes stripped.
field() {
  sed -n 's/^ *"'"$1"'": *"\{0,1\}\([^",]*\)"\{0,1\},\{0,1\} *$/\1/p' | head -n 1
}
# jfield NAME: the value of "NAME" in each one-line JSON event on stdin.
jfield() {
  sed -n 's/.*"'"$1"'":"\{0,1\}\([^",}]*\).*/\1/p'
}
bl() { "$BL" "$@"; }

# Microseconds since the epoch (whole seconds on shells without EPOCHREALTIME).
now_us() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    echo "${EPOCHREALTIME//[!0-9]/}"
  else
    echo $((SECONDS * 1000000))
  fi
}
tenths() { echo $((($(now_us) - start_us) / 100000)); }
elapsed() { local d; d=$(tenths); printf '%d.%ds' $((d / 10)) $((d % 10)); }

# ---------------------------------------------------------------------------
section "Setup"
mkdir -p "$repo" "$logs"
git init -q "$repo"
git -C "$repo" config user.name "bl demo"
git -C "$repo" config user.email "demo@example.invalid"
git -C "$repo" config commit.gpgsign false
echo "# demo project" >"$repo/README.md"
git -C "$repo" add README.md
git -C "$repo" commit -q -m "initial commit"
cd "$repo"
export BL_ACTOR=lead
bl init
if [ "${KEEP:-0}" = 1 ]; then
  echo "repo: $repo (kept after the demo)"
else
  echo "repo: $repo (deleted when the demo ends; KEEP=1 make demo keeps it)"
fi
echo "bl:   $BL ($(bl version))"

# ---------------------------------------------------------------------------
section "Seeding 30 cards (phases M1, M2, M3; dependencies form a DAG)"
# id | phase | priority | depends on | title
cards='
A1|M1|30||Module layout and Makefile
A2|M1|29||Event schema v1
A3|M1|28||CRC32 on every ledger line
A4|M1|27||OS file lock with timeout
A5|M1|26|A3,A4|Append with a single write and fsync
A6|M1|25|A2|Pure fold: events to cards
A7|M1|24|A6|Claim order: priority, age, id
A8|M1|23|A6|Lease epochs and fencing
A9|M1|22|A5|Torn-tail detection and repair
A10|M1|21|A1|CLI skeleton
B1|M2|20|A6,A10|create, show, list
B2|M2|19|A7,A8|claim with a TTL
B3|M2|18|B2|heartbeat and release
B4|M2|17|B2|complete, block, reopen
B5|M2|16|B3|reclaim expired leases
B6|M2|15|B1|stats
B7|M2|14|A5,A6|Atomic snapshot writer
B8|M2|13|B7|Compactor
B9|M2|12|A9|doctor --repair
B10|M2|11|B1|Reject dependency cycles
C1|M3|10|B8|watch via fsnotify
C2|M3|9|C1,B2|claim --wait
C3|M3|8|B1|Markdown export
C4|M3|7|C3|Mermaid and DOT export
C5|M3|6|B8|git sync: commit the backlog
C6|M3|5|C5|git sync: union merge of ledgers
C7|M3|4|C6,B2|Remote claims through push CAS
C8|M3|3|A4|Worktrees share one backlog
C9|M3|2|A5|Benchmarks at 100k cards
C10|M3|1|C7,C4|Release notes
'
ncards=0
while IFS='|' read -r id phase prio deps title; do
  [ -n "$id" ] || continue
  args=(create --id "$id" --phase "$phase" --priority "$prio" --title "$title")
  [ -z "$deps" ] || args+=(--depends-on "$deps")
  bl "${args[@]}" >/dev/null
  ncards=$((ncards + 1))
done <<<"$cards"
echo "created $ncards cards; claimable right away:"
bl ready

# ---------------------------------------------------------------------------
section "$NAGENTS agents: claim --ttl $TTL, work, heartbeat, work, complete ($CRASHER will crash mid-card)"
# A watcher streams every event from here on; resuming from the last
# seeding event's cursor means it misses nothing however late it starts.
from=$(bl log --json | sed -n 's/^ *"cursor": "\([^"]*\)".*/\1/p' | tail -1)
"$BL" watch --from "$from" --json >"$logs/watch.jsonl" 2>"$logs/watch.err" &
watcher=$!
start_us=$(now_us)
for i in $(seq 1 "$NAGENTS"); do
  crash_on=0
  [ "agent-$i" != "$CRASHER" ] || crash_on=1
  # The subshell records the agent's exit status; its own stderr is dropped
  # so that the shell's "Killed" notice for the crash does not show.
  (
    rc=0
    bash "$AGENT" "$BL" "agent-$i" "$logs" "$crash_on" 2>&3 3>&- || rc=$?
    echo "$rc" >"$logs/agent-$i.rc"
  ) 3>&2 2>/dev/null &
  pids+=($!)
done

running() {
  local pid
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then return 0; fi
  done
  return 1
}
last_stat=
statline() {
  local s line rc=0
  s=$(bl stats --json 2>&1) || rc=$?
  if [ "$rc" != 0 ]; then
    printf '[%6s] bl stats failed (exit %s): %s\n' "$(elapsed)" "$rc" "$s"
    return 0
  fi
  line=$(printf 'ready %2s  claimed %s  done %2s  | claimable %s  expired %s' \
    "$(field ready <<<"$s")" "$(field claimed <<<"$s")" "$(field done <<<"$s")" \
    "$(field claimable <<<"$s")" "$(field expired_claims <<<"$s")")
  if [ "${1:-}" != changed ] || [ "$line" != "$last_stat" ]; then
    printf '[%6s] %s\n' "$(elapsed)" "$line"
  fi
  last_stat=$line
}

next=0
while running; do
  if [ "$(tenths)" -ge "$next" ]; then
    statline
    next=$(($(tenths) / 10 * 10 + 10))
  fi
  if [ "$(tenths)" -ge $((DEADLINE * 10)) ]; then
    fail "agents still running after ${DEADLINE}s"
  fi
  sleep 0.1
done
statline changed

wait "${pids[@]}"
crashed_ok=0
for i in $(seq 1 "$NAGENTS"); do
  name=agent-$i
  rc=$(cat "$logs/$name.rc" 2>/dev/null || echo "unknown")
  if [ "$name" = "$CRASHER" ] && [ "$rc" = 137 ]; then
    crashed_ok=1
  elif [ "$rc" != 0 ]; then
    fail "$name exited with status $rc"
  fi
done
pids=()
echo "all agents finished after $(elapsed)"
[ "$crashed_ok" = 1 ] || fail "$CRASHER was meant to crash but did not"
[ -s "$logs/crashed" ] || fail "$CRASHER did not record which card it held"
read -r crashed_card crashed_epoch <"$logs/crashed"

# ---------------------------------------------------------------------------
section "The watch stream"
# Every agent event is durable by now; give the watcher a moment to print
# the last ones, then stop it the way a service would be stopped.
expect=$(( $(wc -l <.backlog/ledger.jsonl) - ncards ))
for _ in $(seq 50); do
  [ "$(wc -l <"$logs/watch.jsonl")" -ge "$expect" ] && break
  sleep 0.1
done
kill -TERM "$watcher" 2>/dev/null || true
wait "$watcher" || fail "bl watch exited with status $? on SIGTERM: $(cat "$logs/watch.err")"
seen=$(wc -l <"$logs/watch.jsonl")
echo "bl watch streamed $seen events as JSON lines, each with a resumable cursor; the first few:"
head -5 "$logs/watch.jsonl" | sed -E 's/^\{"cursor":"([^"]+)".*"op":"([a-z]+)","card":"([^"]+)".*/  cursor \1  \2 \3/'
[ "$seen" = "$expect" ] || fail "bl watch saw $seen events, the ledger has $expect after seeding"

# ---------------------------------------------------------------------------
section "Board"
bl list
echo
echo "bl export --format markdown (the board a pull request shows), first lines:"
bl export --format markdown -o BACKLOG.md
sed -n '1,14p' BACKLOG.md

# ---------------------------------------------------------------------------
section "Checks against .backlog/ledger.jsonl"
ledger=.backlog/ledger.jsonl
stats=$(bl stats --json)
lines=$(wc -l <"$ledger")
events=$(field events <<<"$stats")
[ "$events" = "$lines" ] ||
  fail "bl stats reports $events events but $ledger has $lines lines"
conflicts=$(field conflicts <<<"$stats")
[ "$conflicts" = 0 ] || fail "bl stats reports $conflicts ledger conflicts"
printf '  %-22s %s\n' "ledger" "$lines events, 0 conflicts"

created=$(grep -c '"op":"create"' "$ledger" || true)
[ "$created" = "$ncards" ] || fail "$created create events in the ledger, expected $ncards"
done_n=$(field done <<<"$stats")
total=$(field cards <<<"$stats")
[ "$total" = "$ncards" ] && [ "$done_n" = "$ncards" ] ||
  fail "bl stats: $done_n of $total cards done, expected $ncards of $ncards"
notdone=$(bl list --status ready,claimed,blocked)
[ "$(wc -l <<<"$notdone")" -le 1 ] || fail "cards not done:"$'\n'"$notdone"
printf '  %-22s %s\n' "cards done" "$done_n/$ncards"

completes=$(grep '"op":"complete"' "$ledger" || true)
ncomplete=$(grep -c . <<<"$completes" || true)
twice=$(jfield card <<<"$completes" | sort | uniq -d)
[ -z "$twice" ] || fail "cards completed more than once: $(echo $twice)"
[ "$(jfield card <<<"$completes" | sort -u | wc -l)" = "$ncards" ] &&
  [ "$ncomplete" = "$ncards" ] ||
  fail "$ncomplete complete events for $ncards cards"
printf '  %-22s %s\n' "completed exactly once" "$ncomplete complete events, one per card"

claims=$(grep '"op":"claim"' "$ledger" || true)
nclaims=$(grep -c . <<<"$claims" || true)
pairs=$(paste -d' ' <(jfield card <<<"$claims") <(jfield epoch <<<"$claims"))
[ "$(wc -l <<<"$pairs")" = "$nclaims" ] || fail "could not read card and epoch of every claim event"
dup=$(sort <<<"$pairs" | uniq -d)
[ -z "$dup" ] || fail "same card claimed twice at the same epoch: $dup"
printf '  %-22s %s\n' "claims" "$nclaims, no (card, epoch) pair twice"

# A card claimed more than once had its lease taken over.
takeovers=$(jfield card <<<"$claims" | sort | uniq -d)
ntakeovers=$(grep -c . <<<"$takeovers" || true)
grep -qx "$crashed_card" <<<"$takeovers" ||
  fail "$crashed_card (held by $CRASHER when it crashed) was never claimed again"
fin=$(grep "\"card\":\"$crashed_card\"" <<<"$completes")
fin_owner=$(jfield owner <<<"$fin")
fin_epoch=$(jfield epoch <<<"$fin")
[ -n "$fin_owner" ] && [ "$fin_owner" != "$CRASHER" ] ||
  fail "$crashed_card was completed by '$fin_owner', expected another agent than $CRASHER"
[ "$fin_epoch" -gt "$crashed_epoch" ] ||
  fail "$crashed_card completed at epoch $fin_epoch, not after the crashed lease (epoch $crashed_epoch)"
printf '  %-22s %s\n' "leases taken over" "$ntakeovers ($(echo $takeovers))"
printf '  %-22s %s\n' "crash recovered" \
  "$crashed_card: $CRASHER crashed at epoch $crashed_epoch, $fin_owner completed it at epoch $fin_epoch"
history=$(grep "\"card\":\"$crashed_card\"" "$ledger" | while IFS= read -r ev; do
  op=$(jfield op <<<"$ev")
  ep=$(jfield epoch <<<"$ev")
  printf ' %s%s(%s)' "$op" "${ep:+@$ep}" "$(jfield actor <<<"$ev")"
done)
printf '  %-22s%s\n' "$crashed_card in the ledger" "$history"

# Every completion an agent believes it made is in the ledger, with its epoch.
cat "$logs"/agent-*.log | sort >"$work/agent-done"
while IFS= read -r ev; do
  printf '%s %s %s\n' "$(jfield card <<<"$ev")" "$(jfield epoch <<<"$ev")" "$(jfield owner <<<"$ev")"
done <<<"$completes" | sort >"$work/ledger-done"
diff -u "$work/ledger-done" "$work/agent-done" >"$work/done.diff" ||
  fail "agent logs and ledger disagree:"$'\n'"$(cat "$work/done.diff")"
printf '  %-22s %s\n' "agent logs" "$(wc -l <"$work/agent-done") completions, all match the ledger"
printf '  %-22s' "completions per agent"
for i in $(seq 1 "$NAGENTS"); do
  printf ' %s:%s' "$i" "$(grep -c . "$logs/agent-$i.log" || true)"
done
echo

echo
echo "demo OK: $ncards cards completed exactly once by $NAGENTS agents (1 crash recovered)"

# ---------------------------------------------------------------------------
section "Ledger: first 3 of $lines lines"
head -n 3 "$ledger"

section "git status --short (what a commit would add)"
git status --short --untracked-files=all
