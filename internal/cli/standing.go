package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/bl-backlog/bl/export"
	"github.com/bl-backlog/bl/ledger"
)

// stand reads where the cards in v (a card, a card pointer or a list)
// stand now, for the output that follows: the JSON's derived members and
// the human state words. Nothing to do without an open backlog.
func (a *App) stand(v any) error {
	var cards []ledger.Card
	switch v := v.(type) {
	case ledger.Card:
		cards = []ledger.Card{v}
	case *ledger.Card:
		if v != nil {
			cards = []ledger.Card{*v}
		}
	case []ledger.Card:
		cards = v
	case relatives:
		cards = []ledger.Card{v.Card}
	}
	if len(cards) == 0 || a.backlog == nil {
		return nil
	}
	st, err := a.backlog.Standings(cards)
	if err != nil {
		return err
	}
	if a.standing == nil {
		a.standing = make(map[string]ledger.Standing, len(cards))
	}
	for i, c := range cards {
		a.standing[c.ID] = st[i]
	}
	return nil
}

// standingOf is where c stands as read by stand; from its status alone
// when it was not read.
func (a *App) standingOf(c ledger.Card) (ledger.Standing, bool) {
	st, ok := a.standing[c.ID]
	if !ok {
		st.State = string(c.Status)
	}
	return st, ok
}

// appendStanding inserts the derived members of st into the card JSON at
// the end of b, as AppendCardJSONAt indents it at level (ending in a
// newline, the level's indent and "}").
func appendStanding(b []byte, st ledger.Standing, level int) []byte {
	pad := indent(level + 1)              // the members' indent
	end := len(b) - len("\n"+pad[2:]+"}") // where "\n", the level's indent and "}" start
	if end < 1 || b[len(b)-1] != '}' || b[end] != '\n' {
		return b
	}
	// Nothing here allocates but b's growth: a list prints 100k cards.
	var tailBuf [32]byte
	tail := append(tailBuf[:0], b[end:]...)
	b = appendMember(b[:end], pad, "state")
	b = strconv.AppendQuote(b, st.State)
	b = appendMember(b, pad, "claimable")
	b = strconv.AppendBool(b, st.Claimable)
	b = appendMember(b, pad, "waiting_on")
	if len(st.WaitingOn) == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, '[')
		for i, id := range st.WaitingOn {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n  "...)
			b = append(b, pad...)
			b = strconv.AppendQuote(b, id)
		}
		b = append(b, '\n')
		b = append(b, pad...)
		b = append(b, ']')
	}
	b = appendMember(b, pad, "lease_expired")
	b = strconv.AppendBool(b, st.LeaseExpired)
	if st.WaitingChildren > 0 {
		b = appendMember(b, pad, "waiting_children")
		b = strconv.AppendInt(b, int64(st.WaitingChildren), 10)
	}
	if st.PathsHeldBy != "" {
		b = appendMember(b, pad, "paths_held_by")
		b = strconv.AppendQuote(b, st.PathsHeldBy)
	}
	return append(b, tail...)
}

// appendMember appends `,\n<pad>"name": `.
func appendMember(b []byte, pad, name string) []byte {
	b = append(b, ",\n"...)
	b = append(b, pad...)
	b = append(b, '"')
	b = append(b, name...)
	return append(b, `": `...)
}

// indent is level levels of two spaces.
func indent(level int) string {
	const spaces = "                "
	if 2*level <= len(spaces) {
		return spaces[:2*level]
	}
	return strings.Repeat("  ", level)
}

// writeCardsJSON writes a list of cards as bl list --json prints it, each
// card with the derived members stand read.
func (a *App) writeCardsJSON(w io.Writer, cards []ledger.Card) error {
	return writeCardsStanding(w, cards, func(i int) (ledger.Standing, bool) {
		st, ok := a.standing[cards[i].ID]
		return st, ok
	})
}

// CardsJSON is cards as bl list --json prints them (no final newline),
// each with where it stands (st[i]): what every board and API serves, so
// that they show a card where the command line does.
func CardsJSON(cards []ledger.Card, st []ledger.Standing) ([]byte, bool) {
	if cards == nil {
		cards = []ledger.Card{}
	}
	var buf bytes.Buffer
	if err := writeCardsStanding(&buf, cards, func(i int) (ledger.Standing, bool) { return st[i], true }); err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// CardJSON is one card as bl show --json prints it, with where it stands.
func CardJSON(c ledger.Card, st ledger.Standing) ([]byte, bool) {
	b, ok := export.AppendCardJSON(nil, &c, true)
	if !ok {
		var err error
		if b, err = json.MarshalIndentWithOption(&c, "", "  ", json.DisableHTMLEscape()); err != nil {
			return nil, false
		}
	}
	return appendStanding(b, st, 0), true
}

// writeCardsStanding writes a list of cards as the JSON encoder would
// indent it, each card with the derived members standing gives, in
// pieces: a 100k-card list is 45 MB of JSON, which need not be held in
// memory at once.
func writeCardsStanding(w io.Writer, cards []ledger.Card, standing func(i int) (ledger.Standing, bool)) error {
	if cards == nil {
		_, err := io.WriteString(w, "null\n")
		return err
	}
	lw := cardsWriter{w: w}
	for i := range cards {
		st, ok := standing(i)
		if err := lw.add(&cards[i], st, ok); err != nil {
			return err
		}
	}
	return lw.close()
}

// cardsWriter writes a JSON list of cards one card at a time, in pieces
// of about cardsChunk bytes (writeCardsStanding, bl list --json).
type cardsWriter struct {
	w            io.Writer
	out, scratch []byte
	n            int // cards added
}

const cardsChunk = 256 << 10

// add writes c, with the derived members of st when stood.
func (lw *cardsWriter) add(c *ledger.Card, st ledger.Standing, stood bool) error {
	if lw.out == nil {
		lw.out = make([]byte, 0, cardsChunk+8<<10)
		lw.out = append(lw.out, '[')
	}
	if lw.n > 0 {
		lw.out = append(lw.out, ',')
	}
	lw.n++
	lw.out = append(lw.out, "\n  "...)
	var ok bool
	if lw.out, lw.scratch, ok = export.AppendCardJSONScratch(lw.out, lw.scratch, c, 1); !ok {
		// A card the fast encoder leaves to the JSON encoder, in the
		// same indented form.
		one, err := json.MarshalIndentWithOption(c, "  ", "  ", json.DisableHTMLEscape())
		if err != nil {
			return err
		}
		lw.out = append(lw.out, one...)
	}
	if stood {
		lw.out = appendStanding(lw.out, st, 1)
	}
	if len(lw.out) >= cardsChunk {
		if _, err := lw.w.Write(lw.out); err != nil {
			return err
		}
		lw.out = lw.out[:0]
	}
	return nil
}

// close ends the list: "[]" when no card was added.
func (lw *cardsWriter) close() error {
	if lw.n == 0 {
		_, err := io.WriteString(lw.w, "[]\n")
		return err
	}
	_, err := lw.w.Write(append(lw.out, "\n]\n"...))
	return err
}

// stateWord is the human form of where c stands: the state and its
// detail, "waiting on A1, A2", "waiting until 2026-12-01T09:00:00Z",
// "expired 3m ago", or the state alone.
func (a *App) stateWord(c ledger.Card) string {
	st, _ := a.standingOf(c)
	switch d := a.stateDetail(c, st); {
	case d == "", st.State == ledger.StateClaimed:
		return st.State
	default:
		return st.State + " " + d
	}
}

// stateDetail is what a state waits on or has left: "on A1, A2",
// "until <time>", "on A1 and until <time>" (waiting), "9m59s left"
// (claimed), "3m ago" (expired); "" otherwise.
func (a *App) stateDetail(c ledger.Card, st ledger.Standing) string {
	now := a.now()
	switch st.State {
	case ledger.StateWaiting:
		var why []string
		if len(st.WaitingOn) > 0 {
			why = append(why, "on "+strings.Join(st.WaitingOn, ", "))
		}
		if n := st.WaitingChildren; n > 0 {
			why = append(why, fmt.Sprintf("on %d %s", n, map[bool]string{true: "child", false: "children"}[n == 1]))
		}
		if c.DeferUntil != nil && now.Before(*c.DeferUntil) {
			why = append(why, "until "+stamp(c.DeferUntil))
		}
		if st.PathsHeldBy != "" {
			why = append(why, "paths held by "+st.PathsHeldBy)
		}
		return strings.Join(why, " and ")
	case ledger.StateReview:
		if c.ClaimOwner != "" && c.LeaseExpiresAt != nil && now.Before(*c.LeaseExpiresAt) {
			return "by " + nameText(c.ClaimOwner)
		}
		return "sent by " + nameText(c.SubmittedBy)
	case ledger.StateClaimed:
		if c.LeaseExpiresAt != nil {
			return fmt.Sprintf("%s left", roundDur(c.LeaseExpiresAt.Sub(now)))
		}
	case ledger.StateExpired:
		if c.LeaseExpiresAt != nil {
			return fmt.Sprintf("%s ago", roundDur(now.Sub(*c.LeaseExpiresAt)))
		}
	}
	return ""
}

// waitingOn maps each ready card of cards to its dependencies not done
// yet, for the boards (export.Options.WaitingOn).
func waitingOn(b *ledger.Backlog, cards []ledger.Card) (map[string][]string, error) {
	st, err := b.Standings(cards)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for i, c := range cards {
		if c.Status == ledger.StatusReady && len(st[i].WaitingOn) > 0 {
			out[c.ID] = st[i].WaitingOn
		}
	}
	return out, nil
}
