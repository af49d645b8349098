package export

import (
	"fmt"
	"strings"

	"github.com/bl-backlog/bl/ledger"
)

// workFacts are the lines a board shows, as plain text, about a card's
// work beyond its status: why the last review sent it back, why the last
// attempt failed, the paths it holds, its branch and commit. None when the
// card has none of them, so boards of cards without them are unchanged.
func workFacts(c *ledger.Card) []string {
	var out []string
	if c.RejectReason != "" {
		out = append(out, "Rejected: "+oneLine(c.RejectReason))
	}
	if f := c.LastFailure; f != nil {
		out = append(out, fmt.Sprintf("Last failure %s by %s (epoch %d): %s", stamp(&f.At), orDash(f.Owner), f.Epoch, oneLine(f.Reason)))
	}
	if len(c.Paths) > 0 {
		out = append(out, "Paths: "+strings.Join(c.Paths, " "))
	}
	if c.Branch != "" || c.Commit != "" {
		out = append(out, "Work: "+strings.TrimSpace(c.Branch+" "+c.Commit))
	}
	return out
}
