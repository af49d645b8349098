package ledger

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/bl-backlog/bl/ledger/internal/fold"
	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// renamedFile records, one "old new" line each, the local cards bl sync
// gave a fresh id because the remote had created their id too (local,
// ignored). An agent that claimed such a card before the sync still names
// it by the old id, which is now the remote's card; owner names are often
// shared between clones ("agent", "worker-1") and a first lease is epoch 1
// on both cards, so its heartbeat or complete would pass the fence on the
// remote's card. renamedAway refuses it.
const renamedFile = CacheDir + "/renamed"

// maxRenamed bounds the record: the newest lines are kept.
const maxRenamed = 256

// NoteRenamed adds renames (old id → new) to the record. A failure to
// write costs only the refusal of a stale lease write under the old id,
// which the fence then judges as before.
func (b *Backlog) NoteRenamed(renames map[string]string) error {
	if len(renames) == 0 {
		return nil
	}
	if err := store.CheckLocalPath(b.Dir(), renamedFile); err != nil {
		return err // a link a teammate committed: never written through
	}
	lines := b.renamedLines()
	for from, to := range renames {
		lines = append(lines, from+" "+to)
	}
	if len(lines) > maxRenamed {
		lines = lines[len(lines)-maxRenamed:]
	}
	path := filepath.Join(b.Dir(), filepath.FromSlash(renamedFile))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return store.ReplaceCache(path, []byte(strings.Join(lines, "\n")+"\n"))
}

// renamedLines is the record's well-formed lines.
func (b *Backlog) renamedLines() []string {
	data, err := store.ReadCache(filepath.Join(b.Dir(), filepath.FromSlash(renamedFile)), maxRenamed*2*(wire.MaxIDLen+1))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		from, to, ok := strings.Cut(l, " ")
		if ok && wire.ValidID(from) == nil && wire.ValidID(to) == nil {
			out = append(out, l)
		}
	}
	return out
}

// renamedAway refuses a fenced event (an owner's heartbeat, complete,
// release, …) naming a card this clone renamed away when the card's new
// id holds exactly the lease it names: it is that card's agent, still
// using the old id (see renamedFile). Read only for fenced events.
func (b *Backlog) renamedAway(s *fold.State, e *Event) error {
	if e.Owner == "" || e.Epoch == 0 {
		return nil
	}
	lines := b.renamedLines()
	for i := len(lines) - 1; i >= 0; i-- {
		from, to, _ := strings.Cut(lines[i], " ")
		if from != e.Card {
			continue
		}
		c := s.Find(to)
		if c == nil || c.ClaimOwner != e.Owner || c.ClaimEpoch != e.Epoch {
			continue
		}
		if !store.TrustLocal(b.Dir(), renamedFile) {
			return nil // a teammate's record (git tracks it): not believed
		}
		return wire.Errorf(ErrIDCollision, "bl sync renamed your card %s to %s (the remote created %s too), and the lease %s#%d is on %s; %s is the remote's card, so nothing was written: name %s", from, to, from, e.Owner, e.Epoch, to, from, to)
	}
	return nil
}
