package supervisor

import (
	"strconv"
	"strings"
)

// The placeholders bl run substitutes in the command's arguments, once the
// card is claimed. Unlike $BL_CARD they survive any quoting on the bl run
// command line: no shell expands {id}, so `sh -c "echo {id}"` works as
// well as single quotes do.
const (
	PlaceholderID       = "{id}"
	PlaceholderOwner    = "{owner}"
	PlaceholderEpoch    = "{epoch}"
	PlaceholderWorktree = "{worktree}"
)

// expandArgs is args with the placeholders replaced by the card's values.
// worktree is "" without --worktree (bl run refuses {worktree} then).
// Any other text in braces is left as it is.
func expandArgs(args []string, id, owner string, epoch int64, worktree string) []string {
	r := strings.NewReplacer(PlaceholderID, id, PlaceholderOwner, owner,
		PlaceholderEpoch, strconv.FormatInt(epoch, 10), PlaceholderWorktree, worktree)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}
