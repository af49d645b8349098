package ledger

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bl-backlog/bl/ledger/internal/store"
	"github.com/bl-backlog/bl/ledger/internal/wire"
)

// BenchmarkHistoryChanges compares a full bl log walk with and without the
// fold that finds an update's old values, over about 200k events.
func BenchmarkHistoryChanges(b *testing.B) {
	dir := b.TempDir()
	if _, err := Init(dir); err != nil {
		b.Fatal(err)
	}
	data, err := store.EncodeEvents(wire.BenchEvents(50_000))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, LedgerFile), data, 0o644); err != nil {
		b.Fatal(err)
	}
	bl, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Close()
	b.Run("History", func(b *testing.B) {
		for range b.N {
			if _, err := bl.History(HistoryFilter{}, func(*Event, *Conflict) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HistoryChanges", func(b *testing.B) {
		for range b.N {
			if _, _, err := bl.HistoryChanges(HistoryFilter{}, 20, func(*Event, *Conflict, []Change) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
