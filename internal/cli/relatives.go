package cli

import (
	"bytes"
	"fmt"
	"io"
	"time"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/ledger"
)

// relatives is bl show --json for a card that others link to or name as
// parent: the card's fields, its conflicts when there are any, the links
// other cards have to it ("linked_from", {type, to: the other card}), and
// its children with where each stands and their roll-up.
type relatives struct {
	ledger.Card
	Conflicts  []ledger.Conflict `json:"conflicts,omitempty"`
	LinkedFrom []ledger.Link     `json:"linked_from,omitempty"`
	Children   []childState      `json:"children,omitempty"`
	RollUp     *ledger.RollUp    `json:"rollup,omitempty"`
}

// childState is one child of an epic as bl show lists it.
type childState struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Title string `json:"title"`

	card ledger.Card
}

// relativesOf reads the links to c and its children (one pass over every
// card).
func relativesOf(b *ledger.Backlog, c ledger.Card) (r relatives, err error) {
	var kids []ledger.Card
	err = b.View(func(s *ledger.State, _ time.Time) error {
		r.LinkedFrom = s.LinksTo(c.ID)
		kids = s.Children(c.ID)
		return nil
	})
	if err != nil || len(kids) == 0 {
		return r, err
	}
	st, err := b.Standings(kids)
	if err != nil {
		return r, err
	}
	for i, k := range kids {
		r.Children = append(r.Children, childState{ID: k.ID, State: st[i].State, Title: k.Title, card: k})
	}
	roll := ledger.RollUpOf(st)
	r.RollUp = &roll
	return r, nil
}

// showRelatives prints a card's links both ways, by type, and an epic's
// children with their roll-up.
func (a *App) showRelatives(w io.Writer, c ledger.Card, r relatives) {
	out := c.AllLinks()
	if len(out)+len(r.LinkedFrom) > 0 {
		fmt.Fprintln(w, "  links")
		for _, l := range out {
			fmt.Fprintf(w, "    %s %s\n", ledger.LinkPhrase(l.Type, true), l.To)
		}
		for _, l := range r.LinkedFrom {
			fmt.Fprintf(w, "    %s %s\n", ledger.LinkPhrase(l.Type, false), l.To)
		}
	}
	if len(r.Children) > 0 {
		fmt.Fprintf(w, "  children    %s\n", r.RollUp)
		for _, k := range r.Children {
			if err := a.stand(k.card); err == nil {
				fmt.Fprintf(w, "    %s\n", a.cardLine(k.card))
			}
		}
	}
}

// relativesJSON is the card as writeJSON prints it (with its derived
// members) followed by the members relatives adds.
func (a *App) relativesJSON(r relatives) ([]byte, error) {
	var buf bytes.Buffer
	card := a.Stdout
	a.Stdout = &buf
	err := a.writeJSON(r.Card)
	a.Stdout = card
	if err != nil {
		return nil, err
	}
	extra, err := json.MarshalIndentWithOption(struct {
		Conflicts  []ledger.Conflict `json:"conflicts,omitempty"`
		LinkedFrom []ledger.Link     `json:"linked_from,omitempty"`
		Children   []childState      `json:"children,omitempty"`
		RollUp     *ledger.RollUp    `json:"rollup,omitempty"`
	}{r.Conflicts, r.LinkedFrom, r.Children, r.RollUp}, "", "  ", json.DisableHTMLEscape())
	if err != nil {
		return nil, err
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	inner := bytes.TrimSpace(extra)
	inner = bytes.TrimSuffix(bytes.TrimPrefix(inner, []byte("{")), []byte("}"))
	inner = bytes.TrimRight(inner, "\n ")
	if len(inner) == 0 || len(b) < 2 || b[len(b)-1] != '}' {
		return b, nil
	}
	out := append([]byte(nil), bytes.TrimRight(b[:len(b)-1], "\n ")...)
	out = append(out, ',')
	out = append(out, inner...)
	return append(out, "\n}"...), nil
}
