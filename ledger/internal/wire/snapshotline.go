package wire

import (
	"fmt"
	"time"
)

// ReceiptRetention is how long a request id is remembered after its event:
// a replay within this window appends nothing. Compaction forgets older
// receipts, measured from the newest event, so the snapshot depends only on
// the events folded.
const ReceiptRetention = 7 * 24 * time.Hour

// SnapshotHeader is the first line of snapshot.json.
type SnapshotHeader struct {
	V         int       `json:"v"`
	Seq       int       `json:"seq"`     // archive segments folded
	Events    int64     `json:"events"`  // events folded, conflicts included
	LastAt    time.Time `json:"last_at"` // the newest event folded
	LastID    string    `json:"last_id"`
	Cards     int       `json:"cards"`
	Receipts  int       `json:"receipts"`
	Conflicts int       `json:"conflicts"`
	// Archives fingerprints the set of archive segments folded; when the
	// directory holds another set (a git merge brought segments in), the
	// snapshot is stale and is rebuilt.
	Archives string `json:"archives"`
	// TailBytes and TailCRC describe the ledger prefix the snapshot folded,
	// exactly as it was. A compaction cut short after writing the snapshot
	// leaves a ledger that still starts with those bytes; loading skips
	// exactly them and nothing else.
	TailBytes int64  `json:"tail_bytes,omitempty"`
	TailCRC   string `json:"tail_crc,omitempty"`
}

func CrcHex(b []byte) string {
	return fmt.Sprintf("%08x", Checksum(b))
}

// Snapshot lines after the header: exactly one member each.
type SnapshotLine struct {
	Card     *Card     `json:"card,omitempty"`
	Receipt  *Keyed    `json:"receipt,omitempty"`
	Conflict *Conflict `json:"conflict,omitempty"`
}

type Keyed struct {
	RequestID string `json:"request_id"`
	Receipt
}

// Receipt records what a request id did, so a replay can answer without
// appending.
type Receipt struct {
	Event   string    `json:"event"`
	At      time.Time `json:"at"`
	Op      Op        `json:"op"`
	Card    string    `json:"card"`
	Epoch   int64     `json:"epoch"`
	Version int64     `json:"version"`
}
