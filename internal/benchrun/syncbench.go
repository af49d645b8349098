//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// syncBench measures bl sync through a bare remote on a backlog with
// events of history. Two clones share the remote. The history starts as an
// older bl left it on the remote: every event in ledger.jsonl (the first
// round carries the clone's compaction, once). Then each round, clone b
// creates a card and pushes, and clone a creates a card (timed: bl create)
// and pushes (timed: a sync round that fetches b's event and pushes its
// own). Then clone a claims through the remote (bl claim --remote).
func syncBench(bl, root string, events int) {
	label := human(events) + " events"
	base := filepath.Join(root, fmt.Sprintf("sync%d", events))
	bare := filepath.Join(base, "remote.git")
	must(os.MkdirAll(base, 0o755))
	gitCmd(base, "init", "-q", "--bare", bare)
	clone := func(name string) string {
		dir := filepath.Join(base, name)
		gitCmd(base, "clone", "-q", bare, dir)
		gitCmd(dir, "config", "user.name", "bench")
		gitCmd(dir, "config", "user.email", "bench@example.com")
		return dir
	}
	ca := clone("a")
	a := filepath.Join(ca, ".backlog")
	generate(a, max(events/10, 10), events)
	// The history as a bl that never carried compaction left it: all of it
	// in the remote's ledger.jsonl.
	runCmd(bl, a, "sync", "--push", "--remote", "origin")
	cb := clone("b")
	b := filepath.Join(cb, ".backlog")
	first := timeCmd(bl, a, "create", "--title", "first") + timeCmd(bl, a, "sync", "--push", "--remote", "origin")
	add(fmt.Sprintf("first sync round after the remote's ledger held all %s (bl create + bl sync --push)", label), ms(first), "", "")
	runCmd(bl, b, "sync", "--pull", "--remote", "origin")

	n := min(*runs, 7)
	var creates []time.Duration
	round := median(n, func(i int) time.Duration {
		runCmd(bl, b, "create", "--title", "b "+strconv.Itoa(i))
		runCmd(bl, b, "sync", "--push", "--remote", "origin")
		creates = append(creates, timeCmd(bl, a, "create", "--title", "a "+strconv.Itoa(i)))
		return timeCmd(bl, a, "sync", "--push", "--remote", "origin")
	})
	create := median(len(creates), func(i int) time.Duration { return creates[i] })
	add(fmt.Sprintf("bl create on a clone that syncs (%s)", label), ms(create), "", "")
	add(fmt.Sprintf("bl sync --push, one new event on each side (%s)", label), ms(round), "", "")
	gitCmd(ca, "fetch", "-q", "origin")
	led := gitCmd(ca, "show", "origin/main:.backlog/ledger.jsonl")
	add(fmt.Sprintf("events in the remote's ledger.jsonl after %d rounds (%s)", n, label), strconv.Itoa(strings.Count(led, "\n")), "", "")
	claim := median(n, func(int) time.Duration {
		return timeCmd(bl, a, "claim", "--owner", "bench", "--ttl", "1h", "--remote", "origin")
	})
	add(fmt.Sprintf("bl claim --remote, uncontended (%s)", label), ms(claim), "", "")
}

// gitCmd runs the system git in dir and returns its output.
func gitCmd(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		must(fmt.Errorf("git %s: %w", strings.Join(args, " "), err))
	}
	return string(out)
}
