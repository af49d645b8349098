#!/usr/bin/env bash
# One demo worker: claim, work, heartbeat, complete, until the backlog is empty.
#
# usage: demo-agent.sh BL NAME LOGDIR [CRASH_ON_CLAIM]
#   BL              absolute path of the bl binary
#   NAME            owner and actor name, e.g. agent-1
#   LOGDIR          where NAME.log ("<card> <epoch> <agent>" per completion) goes
#   CRASH_ON_CLAIM  if set to N, die with SIGKILL in the middle of the N-th card
#
# Run it from inside the demo repository.
set -euo pipefail

BL=$1
me=$2
logdir=$3
crash_on=${4:-0}
export BL_ACTOR=$me

log=$logdir/$me.log
err=$logdir/$me.err
: >"$log"
echo $$ >"$logdir/$me.pid"

say() { printf '  %-8s %s\n' "$me" "$*"; }

# field NAME: first '"NAME": value' in the JSON on stdin, quotes stripped.
field() {
  sed -n 's/^ *"'"$1"'": *"\{0,1\}\([^",]*\)"\{0,1\},\{0,1\} *$/\1/p' | head -n 1
}

work() { sleep "0.$((RANDOM % 5 + 2))"; }   # 0.2s - 0.6s

die() { say "$*"; exit 1; }

claims=0
while :; do
  rc=0
  card=$("$BL" claim --owner "$me" --ttl 3s --json 2>"$err") || rc=$?
  [ "$rc" = 0 ] || die "bl claim exited $rc: $(cat "$err")"

  if [ "$card" = null ]; then
    rc=0
    stats=$("$BL" stats --json 2>"$err") || rc=$?
    [ "$rc" = 0 ] || die "bl stats exited $rc: $(cat "$err")"
    ready=$(field ready <<<"$stats")
    claimed=$(field claimed <<<"$stats")
    if [ "${ready:-x}" = 0 ] && [ "${claimed:-x}" = 0 ]; then
      exit 0
    fi
    sleep 0.2   # the rest waits on dependencies or on leases still held
    continue
  fi

  id=$(field id <<<"$card")
  epoch=$(field claim_epoch <<<"$card")
  if [ -z "$id" ] || [ -z "$epoch" ]; then
    say "could not read id/claim_epoch from claim output: $card"
    exit 1
  fi
  claims=$((claims + 1))
  if [ "$epoch" -gt 1 ]; then
    say "took over $id at epoch $epoch (the previous lease expired)"
  fi

  work
  if [ "$claims" = "$crash_on" ]; then
    echo "$id $epoch" >"$logdir/crashed"
    say "CRASH while holding $id (epoch $epoch); its 3s lease will expire"
    kill -9 $$
  fi

  rc=0
  "$BL" heartbeat --id "$id" --owner "$me" --epoch "$epoch" >/dev/null 2>"$err" || rc=$?
  if [ "$rc" = 4 ]; then
    say "fenced: heartbeat $id epoch $epoch refused, dropping the card ($(head -n 1 "$err"))"
    continue
  fi
  [ "$rc" = 0 ] || die "bl heartbeat exited $rc: $(cat "$err")"

  work
  rc=0
  "$BL" complete --id "$id" --owner "$me" --epoch "$epoch" --note "done by $me" >/dev/null 2>"$err" || rc=$?
  if [ "$rc" = 4 ]; then
    say "fenced: complete $id epoch $epoch refused, dropping the card ($(head -n 1 "$err"))"
    continue
  fi
  [ "$rc" = 0 ] || die "bl complete exited $rc: $(cat "$err")"
  echo "$id $epoch $me" >>"$log"
done
