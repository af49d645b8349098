package cli

import (
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/bl-backlog/bl/ledger"
)

// PrimeCmd prints what an agent needs at the start of a session and after
// its context was compacted: the protocol, the cards it holds (with the
// epochs it must pass) and the best cards to claim next. It is run by
// session-start hooks, so it stays small (under 2 KB) and fast (one
// load, no git).
type PrimeCmd struct {
	Owner string `env:"BL_OWNER" help:"Whose held cards to show (default: the actor, as claim's --owner)."`
	Ready int    `default:"5" placeholder:"N" help:"How many claimable cards to show (at most 10)."`
}

func (PrimeCmd) Help() string {
	return `Prints, in under 2 KB, what an agent needs when a session starts or its
context was compacted: how to work through the backlog (claim, heartbeat
every ttl/3, complete with the epoch; "fenced" means stop), the cards the
owner holds now with their epochs and the lease left, and the best cards
to claim next. bl setup claude installs it as Claude Code's SessionStart
and PreCompact hooks.

Examples:

    bl prime --owner claude-1
    bl prime --json | jq '.held[].id'` + exitCodesHelp
}

// bl prime stays under primeBudget bytes: titles are cut at primeTitleMax
// bytes, at most primeHeldMax held cards are listed, and lines that would
// pass the budget are left out (saying how many).
const (
	primeBudget   = 2000
	primeTitleMax = 60
	primeHeldMax  = 5
)

type primeCard struct {
	ID               string     `json:"id"`
	Title            string     `json:"title"`
	Priority         int        `json:"priority"`
	Epoch            int64      `json:"claim_epoch,omitempty"`
	LeaseExpiresAt   *time.Time `json:"lease_expires_at,omitempty"`
	LeaseLeftSeconds *int64     `json:"lease_left_seconds,omitempty"`
	TTLSeconds       int64      `json:"claim_ttl_seconds,omitempty"`
}

type primeOut struct {
	Protocol string      `json:"protocol"`
	Owner    string      `json:"owner"`
	Held     []primeCard `json:"held"`
	Ready    []primeCard `json:"ready"`
	HeldMore bool        `json:"held_more,omitempty"` // more held than listed
}

func (c *PrimeCmd) Run(a *App) error {
	if c.Ready < 0 || c.Ready > 10 {
		return usagef(fmt.Sprintf("--ready %d is outside 0..10", c.Ready))
	}
	b, err := a.Open()
	if err != nil {
		return err
	}
	owner := a.Owner(c.Owner)
	out := primeOut{Protocol: AgentProtocol, Owner: owner, Held: []primeCard{}, Ready: []primeCard{}}
	held, err := b.List(ledger.Filter{Owner: owner, Status: []ledger.Status{ledger.StatusClaimed}, Limit: primeHeldMax + 1}, ledger.SortClaim)
	if err != nil {
		return err
	}
	if len(held) > primeHeldMax {
		held, out.HeldMore = held[:primeHeldMax], true
	}
	now := a.now()
	for _, h := range held {
		p := brief(h)
		p.Epoch, p.LeaseExpiresAt, p.TTLSeconds = h.ClaimEpoch, h.LeaseExpiresAt, h.ClaimTTLSeconds
		if h.LeaseExpiresAt != nil {
			left := int64(h.LeaseExpiresAt.Sub(now) / time.Second)
			p.LeaseLeftSeconds = &left
		}
		out.Held = append(out.Held, p)
	}
	if c.Ready > 0 {
		ready, err := b.Ready(ledger.Filter{Claimer: owner, Limit: c.Ready}) // what the owner's claim takes
		if err != nil {
			return err
		}
		for _, r := range ready {
			out.Ready = append(out.Ready, brief(r))
		}
	}
	if a.JSON {
		return a.writeJSON(out)
	}
	_, err = io.WriteString(a.Stdout, primeText(out))
	return err
}

func brief(c ledger.Card) primeCard {
	t := text(c.Title)
	if len(t) > primeTitleMax {
		cut := primeTitleMax - len("…")
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut] + "…"
	}
	return primeCard{ID: c.ID, Title: t, Priority: c.Priority}
}

// primeText is bl prime's human (and model) form, within primeBudget.
func primeText(o primeOut) string {
	s := o.Protocol + "\n"
	var lines []string
	if len(o.Held) == 0 {
		s += fmt.Sprintf("## You (owner %s) hold no card.\n", nameText(o.Owner))
	} else {
		s += fmt.Sprintf("## You (owner %s) hold: finish these first (or release them)\n", nameText(o.Owner))
		for _, h := range o.Held {
			left := "no lease"
			if h.LeaseLeftSeconds != nil {
				if *h.LeaseLeftSeconds > 0 {
					left = fmt.Sprintf("lease %s left", roundDur(time.Duration(*h.LeaseLeftSeconds)*time.Second))
				} else {
					left = "lease EXPIRED: claim it again before any write"
				}
			}
			lines = append(lines, fmt.Sprintf("- %s epoch %d, %s: %s\n", h.ID, h.Epoch, left, h.Title))
		}
	}
	if o.HeldMore {
		lines = append(lines, fmt.Sprintf("- and more: bl list --owner %s\n", nameText(o.Owner)))
	}
	s, lines = addWithin(s, lines)
	if len(o.Ready) == 0 {
		s += "## Nothing is claimable now.\n"
	} else {
		s += "## Claimable next (claim takes the first):\n"
		for _, r := range o.Ready {
			lines = append(lines, fmt.Sprintf("- %s p%d: %s\n", r.ID, r.Priority, r.Title))
		}
	}
	s, _ = addWithin(s, lines)
	return s
}

// addWithin appends lines to s while s stays within primeBudget (keeping
// room for the line that says how many were left out).
func addWithin(s string, lines []string) (string, []string) {
	for i, l := range lines {
		if len(s)+len(l) > primeBudget-40 {
			return s + fmt.Sprintf("- (%d more left out)\n", len(lines)-i), nil
		}
		s += l
	}
	return s, nil
}
