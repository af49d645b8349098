package cli

import (
	"fmt"
	"slices"
	"strings"
)

// aliases are the other names people type for a command, from other
// trackers and habit. An alias whose command is not registered is not
// offered (and its word is an unknown command).
var aliases = map[string]string{
	"add":     "create",
	"close":   "complete",
	"comment": "note",
	"done":    "complete",
	"edit":    "update",
	"ls":      "list",
	"new":     "create",
	"rm":      "delete",
}

// aliasesOf lists the aliases of the command name, sorted.
func aliasesOf(name string) []string {
	var out []string
	for a, n := range aliases {
		if n == name {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// canonical is the command name or alias word names, or "" for none.
func canonical(word string) string {
	if commandNamed(word) {
		return word
	}
	if n, ok := aliases[word]; ok && commandNamed(n) {
		return n
	}
	return ""
}

// foreignVerbs are words other trackers (beads, Backlog.md) use for what bl
// says another way: an unknown command that is one of them is answered
// with bl's way.
var foreignVerbs = map[string]string{
	"blocked":  "bl list --state blocked,waiting",
	"comments": "bl show ID (its notes)",
	"depend":   "bl dep add A B (A depends on B)",
	"deps":     "bl dep add A B (A depends on B)",
	"find":     "bl search WORDS",
	"finish":   "bl complete ID",
	"info":     "bl show ID",
	"onboard":  "bl setup claude|codex|cursor|gemini, and bl prime",
	"resolve":  "bl complete ID",
	"take":     "bl claim ID",
	"todo":     "bl ready, or bl create TITLE",
	"labels":   "bl label add ID LABEL",
	"start":    "bl claim ID",
	"status":   "bl stats, or bl show ID",
	"task":     "bl create TITLE, bl list",
	"tree":     "bl list --tree",
	"unassign": "bl assign ID -",
	"view":     "bl show ID",
}

// neverSuggested are the commands a typo must not lead to: they run
// programs, give work away or rewrite the backlog, so a guess that is
// wrong costs more than no guess.
var neverSuggested = map[string]bool{
	"run": true, "init": true, "delete": true, "restore": true, "reclaim": true, "release": true,
	"fail": true, "compact": true, "sync": true, "block": true, "reopen": true, "unlink": true,
	"handoff": true, "reject": true, "approve": true, "import": true,
}

// unknownCommand explains a word that is not a command, with the closest
// safe command as a suggestion when there is one.
func unknownCommand(word string) error {
	msg := fmt.Sprintf("unknown command %q", word)
	if f, ok := foreignVerbs[strings.ToLower(word)]; ok {
		msg += fmt.Sprintf(": in bl that is %s", f)
	} else if s := suggestCommand(word); s != "" {
		msg += fmt.Sprintf(", did you mean %q?", s)
	}
	return usagef(msg + " (see bl --help)")
}

// suggestCommand is the command or alias closest to word, when it is close
// (one edit for short words, two for longer) and not one that must not be
// guessed; "" otherwise.
func suggestCommand(word string) string {
	word = strings.ToLower(word)
	var names []string
	for _, c := range commands {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	for a, n := range aliases {
		if commandNamed(n) {
			names = append(names, a)
		}
	}
	slices.Sort(names)
	max := 1
	if len(word) > 4 {
		max = 2
	}
	best, bestD := "", max+1
	for _, n := range names {
		if d := editDistance(word, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	if neverSuggested[best] || neverSuggested[aliases[best]] {
		return ""
	}
	return best
}

// editDistance is the number of single-letter insertions, deletions,
// substitutions and swaps of neighbours that turn a into b (optimal string
// alignment distance: "lsit" is one from "list").
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
