package gitsync

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bl-backlog/bl/ledger"
)

// TestSummarizeNamesEveryOp: every event kind has its verb in a commit
// summary, so a new kind never shows as a bare card list.
func TestSummarizeNamesEveryOp(t *testing.T) {
	for _, op := range ledger.Ops {
		if op.Done() == "" {
			t.Errorf("op %s has no verb in commit summaries", op)
		}
	}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var ledgerBytes []byte
	for i, e := range []*ledger.Event{
		{Op: ledger.OpFail, Card: "A1", Owner: "w1", Epoch: 1, Reason: "tests fail"},
		{Op: ledger.OpNote, Card: "A2", Text: "see the logs"},
	} {
		e.V, e.ID, e.At, e.Actor = 1, fmt.Sprintf("%016x", i+1), at.Add(time.Duration(i)), "x"
		line, err := ledger.EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		ledgerBytes = append(ledgerBytes, line...)
	}
	got := Summarize(ledger.Tree{}, ledger.Tree{ledger.LedgerFile: ledgerBytes})
	if want := "noted A2; failed A1"; got != want {
		t.Fatalf("Summarize = %q, want %q", got, want)
	}
}

// TestSummarizeLabelsCompaction: a commit whose only change is a
// compaction (the ledger's lines moved into a new archive segment) says so
// in its message, rather than "backlog files updated".
func TestSummarizeLabelsCompaction(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var lines []byte
	for i := range 3 {
		e := &ledger.Event{V: 1, ID: fmt.Sprintf("%016x", i+1), At: at.Add(time.Duration(i)), Actor: "x", Op: ledger.OpCreate, Card: fmt.Sprintf("A%d", i)}
		line, err := ledger.EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line...)
	}
	prev := ledger.Tree{ledger.LedgerFile: lines}
	next := ledger.Tree{ledger.LedgerFile: nil, "archive/x.jsonl": lines}
	got := Summarize(prev, next)
	if want := "compaction: 3 events moved into archive/x.jsonl"; !strings.HasPrefix(got, want) {
		t.Fatalf("Summarize = %q, want it to start %q", got, want)
	}
}

// TestSummarizeReview: the review ops read as what they did, with the
// reviewer named.
func TestSummarizeReview(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var ledgerBytes []byte
	for i, e := range []*ledger.Event{
		{Op: ledger.OpReview, Card: "A3", Owner: "w1", Epoch: 1, Actor: "x"},
		{Op: ledger.OpClaimReview, Card: "A4", Owner: "rev", Epoch: 2, TTLSeconds: 60, Actor: "x"},
		{Op: ledger.OpApprove, Card: "A4", Owner: "rev", Epoch: 2, Actor: "x"},
		{Op: ledger.OpApprove, Card: "A5", Epoch: 1, Actor: "carol"},
		{Op: ledger.OpReject, Card: "A6", Epoch: 1, Reason: "no", Actor: "carol"},
	} {
		e.V, e.ID, e.At = 3, fmt.Sprintf("%016x", i+1), at.Add(time.Duration(i))
		line, err := ledger.EncodeLine(e)
		if err != nil {
			t.Fatal(err)
		}
		ledgerBytes = append(ledgerBytes, line...)
	}
	got := Summarize(ledger.Tree{}, ledger.Tree{ledger.LedgerFile: ledgerBytes})
	want := "A3 sent to review; A4 taken for review by rev; A4 approved by rev, A5 approved by carol; A6 rejected by carol"
	if got != want {
		t.Fatalf("Summarize = %q, want %q", got, want)
	}
}
