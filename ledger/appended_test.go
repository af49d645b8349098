package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestAppendedOption: Options.Appended is given exactly the events each
// write made durable, once; a replayed request and a write that appends
// nothing give nothing.
func TestAppendedOption(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".backlog")
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	var got []string
	b, err := Open(dir, Options{Appended: func(evs []*Event) {
		for _, e := range evs {
			got = append(got, string(e.Op)+" "+e.Card)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	m := Mutation{Actor: "t", RequestID: "r1"}
	if _, _, err := b.Create(ctx, CreateRequest{Mutation: m, ID: "A", Title: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Create(ctx, CreateRequest{Mutation: m, ID: "A", Title: "a"}); err != nil { // replay
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, ClaimRequest{Mutation: Mutation{Actor: "t"}, Owner: "w", ID: "A"}); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Claim(ctx, ClaimRequest{Mutation: Mutation{Actor: "t"}, Owner: "w"}); err != nil || c != nil { // nothing claimable
		t.Fatal(c, err)
	}
	if want := "[create A claim A]"; fmt.Sprint(got) != want {
		t.Errorf("Appended saw %v, want %s", got, want)
	}
}
