package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// StatsCmd summarises the backlog.
type StatsCmd struct{}

func (StatsCmd) Help() string {
	return `Examples:

    bl stats
    bl stats --json | jq .claimable` + exitCodesHelp
}

func (c *StatsCmd) Run(a *App) error {
	b, err := a.Open()
	if err != nil {
		return err
	}
	st, err := b.Stats()
	if err != nil {
		return err
	}
	return a.emit(st, func(w io.Writer) {
		fmt.Fprintf(w, "cards      %d  (ready %d, claimed %d, blocked %d, done %d)\n", st.Cards,
			st.ByStatus[ledger.StatusReady], st.ByStatus[ledger.StatusClaimed], st.ByStatus[ledger.StatusBlocked], st.ByStatus[ledger.StatusDone])
		if st.Epics > 0 || st.Deleted > 0 {
			fmt.Fprintf(w, "epics      %d  (cards with children)\n", st.Epics)
			fmt.Fprintf(w, "deleted    %d\n", st.Deleted)
		}
		fmt.Fprintf(w, "claimable  %d\n", st.Claimable)
		fmt.Fprintf(w, "expired    %d\n", st.ExpiredClaims)
		if st.OldestReadyID != "" {
			fmt.Fprintf(w, "oldest     %s, ready for %s\n", st.OldestReadyID, roundDur(time.Duration(st.OldestReadyAge*float64(time.Second))))
		}
		fmt.Fprintf(w, "ledger     %d events (%d since compaction), %d bytes, %d conflicts\n", st.Events, st.EventsSinceCompaction, st.LedgerBytes, st.Conflicts)
		if st.SnapshotAt != nil {
			fmt.Fprintf(w, "snapshot   %d bytes, %d compactions, written %s ago\n", st.SnapshotBytes, st.Compactions, roundDur(time.Duration(st.SnapshotAgeSeconds*float64(time.Second))))
		}
		if st.CompactError != "" {
			fmt.Fprintf(w, "WARNING    automatic compaction failed: %s\n", text(st.CompactError))
		}
	})
}
