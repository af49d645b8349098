package gitsync

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// message is the commit message: the caller's subject if any, and a
// summary of the events that are new since the branch's commit, by kind.
func (s *Syncer) message(prev, next ledger.Tree, merge bool) string {
	summary := Summarize(prev, next)
	if merge {
		summary += " (merged " + s.remoteLabel() + ")"
	}
	if s.o.Message != "" {
		return strings.TrimSpace(s.o.Message) + "\n\nbl: " + summary + "\n"
	}
	return "bl: " + summary + "\n"
}

// Summarize names, by kind, the cards of the events next holds that prev
// does not, for a reviewer reading git log: "A1 claimed by w1; A2 done;
// created A5 A6". Heartbeats are only counted, and a long list of cards
// ends in "+N more". Files the two trees share byte for byte are skipped,
// so the cost follows what changed, not all history.
func Summarize(prev, next ledger.Tree) string {
	changed := func(t, other ledger.Tree) ledger.Tree {
		out := ledger.Tree{}
		for name, data := range t {
			if name == ledger.SnapshotFile || name == ledger.ConfigFile || name == ledger.IgnoreFile {
				continue
			}
			if o, ok := other[name]; !ok || string(o) != string(data) {
				out[name] = data
			}
		}
		return out
	}
	old, _ := changed(prev, next).Events()
	neu, _ := changed(next, prev).Events()
	seen := make(map[string]bool, len(old))
	for _, e := range old {
		seen[e.ID] = true
	}
	byOp := map[ledger.Op][]*ledger.Event{}
	moved := 0 // events a compaction moved into a new segment
	for _, e := range neu {
		if !seen[e.ID] {
			byOp[e.Op] = append(byOp[e.Op], e)
		} else {
			moved++
		}
	}
	var parts []string
	for _, op := range ledger.Ops {
		evs := byOp[op]
		switch {
		case len(evs) == 0:
		case op == ledger.OpHeartbeat:
			parts = append(parts, plural(len(evs), "heartbeat"))
		case op == ledger.OpClaim:
			// Grouped by owner, in the order of their first claim.
			var owners []string
			cards := map[string][]string{}
			for _, e := range evs {
				if _, ok := cards[e.Owner]; !ok {
					owners = append(owners, e.Owner)
				}
				cards[e.Owner] = append(cards[e.Owner], e.Card)
			}
			var claims []string
			for _, o := range owners {
				claims = append(claims, cardList(cards[o])+" claimed by "+o)
			}
			parts = append(parts, strings.Join(claims, ", "))
		case op == ledger.OpComplete:
			parts = append(parts, cardList(cardsOf(evs))+" done")
		case op == ledger.OpReview:
			parts = append(parts, cardList(cardsOf(evs))+" sent to review")
		case op == ledger.OpApprove || op == ledger.OpReject || op == ledger.OpClaimReview:
			parts = append(parts, byReviewer(op, evs))
		case op == ledger.OpLink || op == ledger.OpUnlink:
			var pairs []string
			for _, e := range evs {
				pairs = append(pairs, e.Card+"→"+e.To)
			}
			parts = append(parts, op.Done()+" "+cardList(pairs))
		default:
			parts = append(parts, op.Done()+" "+cardList(cardsOf(evs)))
		}
	}
	// A compaction moves lines from ledger.jsonl into a new archive
	// segment and rewrites the snapshot: a raw git diff of it is all moved
	// lines. Say so, for whoever reads the commit with git log -p.
	var segs []string
	for name := range next {
		if _, had := prev[name]; isSegment(name) && !had {
			segs = append(segs, name)
		}
	}
	if len(segs) > 0 && moved > 0 {
		slices.Sort(segs)
		parts = append(parts, fmt.Sprintf("compaction: %s moved into %s and the snapshot rebuilt (moved lines, not new events: bl diff shows what changed)",
			plural(moved, "event"), strings.Join(segs, " ")))
	}
	if len(parts) == 0 {
		return "backlog files updated"
	}
	return strings.Join(parts, "; ")
}

func cardsOf(evs []*ledger.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Card
	}
	return out
}

// cardList names up to five distinct cards, then how many more.
func cardList(ids []string) string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	const shown = 5
	if len(out) > shown {
		return strings.Join(out[:shown], " ") + fmt.Sprintf(" +%d more", len(out)-shown)
	}
	return strings.Join(out, " ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// byReviewer is "A3, A4 approved by rev-1, A5 approved by carol": the
// review events of one op grouped by reviewer (the owner holding the
// review, else the actor), in the order of their first event.
func byReviewer(op ledger.Op, evs []*ledger.Event) string {
	var who []string
	cards := map[string][]string{}
	for _, e := range evs {
		r := e.Owner
		if r == "" {
			r = e.Actor
		}
		if _, ok := cards[r]; !ok {
			who = append(who, r)
		}
		cards[r] = append(cards[r], e.Card)
	}
	var out []string
	for _, r := range who {
		out = append(out, cardList(cards[r])+" "+op.Done()+" by "+r)
	}
	return strings.Join(out, ", ")
}
