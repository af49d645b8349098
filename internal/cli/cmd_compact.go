package cli

import (
	"fmt"
	"io"
)

// CompactCmd folds the ledger into the snapshot.
type CompactCmd struct{}

func (CompactCmd) Help() string {
	return `Folds ledger.jsonl into snapshot.json (one card per line, the same bytes
for the same state) and starts a fresh ledger; the folded events move to
.backlog/archive/, named after their newest event, where bl log still reads
them. Every step is atomic and ordered so a crash at any point loses
nothing. Writers wait for the lock meanwhile; readers and watchers keep
working. It also writes .backlog/cache/snapshot.idx, the local index through
which later calls read only the snapshot lines they need.

Compaction also runs by itself when ledger.jsonl grows past compact_bytes
in .backlog/config.json (-1 turns it off). By default that is 64 KiB, or
1/128 of snapshot.json's size once that is larger: every call folds the
whole ledger, so it is kept short, while each compaction rewrites the
whole snapshot, so a large backlog compacts less often.

Examples:

    bl compact
    bl compact --json` + exitCodesHelp
}

func (c *CompactCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	res, err := b.Compact(a.ctx)
	if err != nil {
		return err
	}
	return a.emit(res, func(w io.Writer) {
		if res.Events == 0 {
			fmt.Fprintf(w, "nothing to compact (%d compactions so far)\n", res.Seq)
			return
		}
		fmt.Fprintf(w, "compacted %d events (%d bytes) into snapshot.json: %d cards, %d bytes; history in %s\n",
			res.Events, res.LedgerBytes, res.Cards, res.SnapshotBytes, res.Archive)
	})
}
