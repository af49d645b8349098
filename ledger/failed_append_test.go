package ledger

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/store"
)

// tailer reads the ledger without the lock as bl watch does (watch.tail):
// from where it left off in the file it holds open, starting over (each
// event once) when the path names another file or the file shrank below
// where it was.
type tailer struct {
	path   string
	f      *os.File
	offset int64
	seen   map[string]bool
	cards  []string
}

func (tl *tailer) catchUp(t *testing.T) {
	t.Helper()
	for {
		if tl.f == nil {
			f, err := os.Open(tl.path)
			if err != nil {
				t.Fatal(err)
			}
			tl.f, tl.offset = f, 0
		}
		var err error
		_, tl.offset, err = ReadEventsFile(tl.f, tl.path, tl.offset, Cursor{}, func(e *Event) error {
			if !tl.seen[e.ID] {
				tl.seen[e.ID] = true
				tl.cards = append(tl.cards, e.Card)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("follower: %v", err)
		}
		now, err := os.Stat(tl.path)
		if err != nil {
			t.Fatal(err)
		}
		open, err := tl.f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(now, open) && now.Size() >= tl.offset {
			return
		}
		tl.f.Close()
		tl.f = nil
	}
}

// TestFailedAppendAndFollower: an append whose fsync fails is taken back,
// but a follower may have read its line in between (the bytes are in the
// file before the fsync). The next append must not land under the
// follower's offset, where it would skip it (a line of the same length) or
// resume in the middle of it (damage): the follower sees every event
// appended after the failed one.
func TestFailedAppendAndFollower(t *testing.T) {
	e := newEnv(t)
	e.create("A")
	tl := &tailer{path: e.ledgerPath(), seen: map[string]bool{}}
	defer func() {
		if tl.f != nil {
			tl.f.Close()
		}
	}()
	tl.catchUp(t)
	e.b.st.SetFsync(func(f *os.File) error {
		tl.catchUp(t) // the line is in the file, not yet durable
		return errors.New("injected fsync failure")
	})
	if _, _, err := e.b.Create(e.ctx, CreateRequest{Mutation: m, ID: "B", Title: "card B"}); err == nil {
		t.Fatal("create B: the fsync failed, yet it succeeded")
	}
	e.b.st.SetFsync(store.Fdatasync)
	tl.catchUp(t) // the file is shorter than what it read
	e.create("C") // a line as long as B's
	tl.catchUp(t)
	e.create("D")
	tl.catchUp(t)
	if want := []string{"A", "B", "C", "D"}; !slices.Equal(tl.cards, want) {
		t.Fatalf("the follower saw %v, want %v (B, never acknowledged, read before it was taken back)", tl.cards, want)
	}
	if _, err := e.b.Get("B"); err == nil {
		t.Fatal("B, whose append failed, is a card")
	}
}
